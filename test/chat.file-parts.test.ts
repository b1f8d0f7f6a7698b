/**
 * Files, audio and video in user messages reach the native adapters' providers in the form each
 * takes (Anthropic: `document` and `image` blocks; Gemini: `inlineData` and `fileData` parts), and a
 * part the provider cannot take refuses the request with a 400 naming it — before any upstream
 * request, nothing charged. Regression: every part but text and image_url was dropped, so the model
 * answered without the PDF the caller attached, as a success.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { balanceUnits, chat, type TestGateway } from './helpers/gateway.js';
import {
  anthropicSse as A,
  geminiSse,
  startNativeGateway,
  startScriptedProvider,
  type ScriptedProvider,
} from './helpers/scripted-native-provider.js';

const FAST = { connect_ms: 2000, first_token_ms: 2000, idle_ms: 800, response_ms: 5000 };
const PDF = 'JVBERi0xLjQK';
const TEXT = Buffer.from('Line one.\nLine two.').toString('base64');
const PNG = 'iVBORw0KGgo=';

const withPart = (part: unknown) => [{ role: 'user', content: [{ type: 'text', text: 'Look at this.' }, part] }];
const file = (fileData: string, filename?: string) => ({
  type: 'file',
  file: { file_data: fileData, ...(filename === undefined ? {} : { filename }) },
});

describe('file, audio and video parts on the native adapters', () => {
  let up: ScriptedProvider;
  let gw: TestGateway;
  let key: string;
  let accountId: string;
  beforeAll(async () => {
    up = await startScriptedProvider();
    up.scripts.set('claude-file', () => [
      A.start(),
      A.textStart(0),
      A.text(0, 'ok'),
      A.blockStop(0),
      A.messageDelta('end_turn', { output_tokens: 1 }),
      A.messageStop(),
    ]);
    up.scripts.set('gem-file', () => [
      geminiSse({
        candidates: [{ content: { role: 'model', parts: [{ text: 'ok' }] }, finishReason: 'STOP', index: 0 }],
        usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 1 },
      }),
    ]);
    gw = await startNativeGateway(up, {
      providers: [
        { id: 'anth', kind: 'anthropic' },
        { id: 'gem', kind: 'gemini' },
      ],
      models: [
        { id: 'n/claude-file', endpoints: [{ provider: 'anth', model: 'claude-file' }] },
        { id: 'n/gem-file', endpoints: [{ provider: 'gem', model: 'gem-file' }] },
      ],
      timeouts: FAST,
    });
    accountId = await gw.createAccount(10);
    key = (await gw.createKey(accountId)).key;
  });
  afterAll(async () => {
    await gw.close();
    await up.close();
  });

  /** The content the provider received for one request with `part` (the user turn's blocks or parts). */
  async function sent(model: string, part: unknown): Promise<unknown[]> {
    up.requests.length = 0;
    const r = await chat(gw, key, { model, messages: withPart(part) });
    expect(r.status, r.text).toBe(200);
    const body = up.requests.at(-1)!.body;
    return model === 'n/claude-file'
      ? (body.messages as { content: unknown[] }[])[0]!.content
      : (body.contents as { parts: unknown[] }[])[0]!.parts;
  }

  it('Anthropic: PDFs (data, raw base64, URL) and plain text as documents, an image file as an image', async () => {
    expect(await sent('n/claude-file', file(`data:application/pdf;base64,${PDF}`, 'a.pdf'))).toContainEqual({
      type: 'document',
      source: { type: 'base64', media_type: 'application/pdf', data: PDF },
      title: 'a.pdf',
    });
    expect(await sent('n/claude-file', file(PDF, 'report.PDF'))).toContainEqual({
      type: 'document',
      source: { type: 'base64', media_type: 'application/pdf', data: PDF },
      title: 'report.PDF',
    });
    expect(await sent('n/claude-file', file('https://files.example/a.pdf'))).toContainEqual({
      type: 'document',
      source: { type: 'url', url: 'https://files.example/a.pdf' },
    });
    expect(await sent('n/claude-file', file(`data:text/plain;base64,${TEXT}`))).toContainEqual({
      type: 'document',
      source: { type: 'text', media_type: 'text/plain', data: 'Line one.\nLine two.' },
    });
    expect(await sent('n/claude-file', file(`data:image/png;base64,${PNG}`))).toContainEqual({
      type: 'image',
      source: { type: 'base64', media_type: 'image/png', data: PNG },
    });
  });

  it('Gemini: files, audio and video as inline data or file URIs', async () => {
    expect(await sent('n/gem-file', file(`data:application/pdf;base64,${PDF}`))).toContainEqual({
      inlineData: { mimeType: 'application/pdf', data: PDF },
    });
    expect(await sent('n/gem-file', file('https://files.example/a.pdf'))).toContainEqual({
      fileData: { mimeType: 'application/pdf', fileUri: 'https://files.example/a.pdf' },
    });
    expect(
      await sent('n/gem-file', { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } }),
    ).toContainEqual({
      inlineData: { mimeType: 'audio/wav', data: 'UklGRg==' },
    });
    expect(
      await sent('n/gem-file', { type: 'video_url', video_url: { url: 'https://files.example/clip.webm' } }),
    ).toContainEqual({
      fileData: { mimeType: 'video/webm', fileUri: 'https://files.example/clip.webm' },
    });
  });

  it('a part the provider cannot take is a 400 naming it: no upstream request, nothing charged', async () => {
    const refusals: [string, unknown, RegExp][] = [
      [
        'n/claude-file',
        { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } },
        /Anthropic endpoints cannot take audio/,
      ],
      [
        'n/claude-file',
        { type: 'video_url', video_url: { url: 'https://files.example/clip.mp4' } },
        /cannot take video/,
      ],
      ['n/claude-file', file('data:application/msword;base64,AAAA', 'a.doc'), /a file of type application\/msword/],
      ['n/claude-file', file('not base64 and no URL'), /neither a data URL nor a URL/],
      ['n/claude-file', { type: 'file', file: { file_id: 'file-abc' } }, /a file given by file_id/],
      [
        'n/gem-file',
        { type: 'file', file: { file_id: 'file-abc' } },
        /Gemini endpoints cannot take a file given by file_id/,
      ],
    ];
    const before = await balanceUnits(gw, accountId);
    for (const [model, part, reason] of refusals) {
      up.requests.length = 0;
      const r = await chat(gw, key, { model, messages: withPart(part) });
      expect(r.status, r.text).toBe(400);
      expect(r.json.error.message).toMatch(reason);
      expect(up.requests).toHaveLength(0);
    }
    expect(await balanceUnits(gw, accountId)).toBe(before);
  });
});
