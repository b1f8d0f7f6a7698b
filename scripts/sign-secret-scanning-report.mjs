#!/usr/bin/env node
// Plays the code host of a secret-scanning partner program against a Tollgate gateway (for trying
// POST /api/v1/secret-scanning/verify by hand):
//
//   node scripts/sign-secret-scanning-report.mjs keygen [DIR]
//       writes DIR/scanning-private.pem and DIR/scanning-public.pem (ECDSA P-256) and prints the
//       `secret_scanning.public_keys` entry to put in the gateway's YAML config
//   node scripts/sign-secret-scanning-report.mjs send --key DIR/scanning-private.pem --id test-key \
//       [--url http://127.0.0.1:8080] [--source content] [--where https://example.com/leak] TOKEN...
//       signs the report [{ token, type, url, source }] over its exact bytes and POSTs it; prints the answer
//   ... send --dry-run ...   prints the body and the two headers instead of sending
import { createPrivateKey, generateKeyPairSync, sign } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { request } from 'undici';

const out = (text) => process.stdout.write(`${text}\n`);

function keygen(dir = '.') {
  mkdirSync(dir, { recursive: true });
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const publicPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  writeFileSync(join(dir, 'scanning-private.pem'), privateKey.export({ type: 'pkcs8', format: 'pem' }), {
    mode: 0o600,
  });
  writeFileSync(join(dir, 'scanning-public.pem'), publicPem);
  out(`wrote ${join(dir, 'scanning-private.pem')} and ${join(dir, 'scanning-public.pem')}; add to the config:\n`);
  out('secret_scanning:\n  public_keys:\n    - key_identifier: test-key\n      key: |');
  for (const line of publicPem.trim().split('\n')) out(`        ${line}`);
}

async function send(args) {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      key: { type: 'string' },
      id: { type: 'string', default: 'test-key' },
      url: { type: 'string', default: 'http://127.0.0.1:8080' },
      type: { type: 'string', default: 'tollgate_api_key' },
      source: { type: 'string', default: 'content' },
      where: { type: 'string', default: 'https://example.com/where-it-leaked' },
      'dry-run': { type: 'boolean', default: false },
    },
  });
  if (!values.key || positionals.length === 0)
    throw new Error('usage: send --key PRIVATE.pem [--id ID] [--url BASE] TOKEN...');
  const body = JSON.stringify(
    positionals.map((token) => ({ token, type: values.type, url: values.where, source: values.source })),
  );
  const signature = sign('sha256', Buffer.from(body), {
    key: createPrivateKey(readFileSync(values.key)),
    dsaEncoding: 'der',
  }).toString('base64');
  const headers = {
    'content-type': 'application/json',
    'github-public-key-identifier': values.id,
    'github-public-key-signature': signature,
  };
  if (values['dry-run']) {
    out(JSON.stringify({ headers, body }, null, 2));
    return;
  }
  const response = await request(`${values.url.replace(/\/+$/, '')}/api/v1/secret-scanning/verify`, {
    method: 'POST',
    headers,
    body,
  });
  out(`HTTP ${response.statusCode}`);
  out(await response.body.text());
  if (response.statusCode !== 200) process.exitCode = 1;
}

const [command, ...rest] = process.argv.slice(2);
try {
  if (command === 'keygen') keygen(rest[0]);
  else if (command === 'send') await send(rest);
  else
    throw new Error(
      'usage: sign-secret-scanning-report.mjs keygen [DIR] | send --key PRIVATE.pem [--id ID] [--url BASE] TOKEN...',
    );
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 2;
}
