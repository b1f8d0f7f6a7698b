/** The account's keys, every page of them (the list answers 100 at a time, newest first). */
import { api } from './client';
import type { ApiKey } from './types';

const PAGE = 100;

export async function loadKeys(): Promise<ApiKey[]> {
  const all: ApiKey[] = [];
  for (let offset = 0; ; offset += PAGE) {
    const page = await api<{ data: ApiKey[] }>('GET', `/keys?include_disabled=true&offset=${offset}`);
    all.push(...page.data);
    if (page.data.length < PAGE) return all;
  }
}
