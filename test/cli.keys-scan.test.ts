/** `tollgate keys scan` as a pre-commit hook would run it: real process, real files, stdin. */
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKey, maskKey } from '../src/auth/key-format.js';
import { BIN, buildOnce, ROOT, runCli } from './helpers/process.js';

describe('tollgate keys scan', () => {
  let dir: string;
  const key = generateKey();
  const other = generateKey();
  // Right shape, wrong checksum: dropped offline.
  const lookAlike = `sk-tg-v1-${'ab'.repeat(32)}`;

  beforeAll(async () => {
    await buildOnce();
    dir = await mkdtemp(join(tmpdir(), 'tollgate-scan-'));
    await mkdir(join(dir, 'src', 'deep'), { recursive: true });
    await mkdir(join(dir, 'node_modules', 'x'), { recursive: true });
    await writeFile(join(dir, 'README.md'), `# app\nuse ${lookAlike} as an example\n`);
    await writeFile(
      join(dir, 'src', 'deep', 'config.ts'),
      `export const a = 1;\n\nconst KEY = "${key}";\nconst B = '${other}'; // ${key}\n`,
    );
    await writeFile(join(dir, 'node_modules', 'x', 'index.js'), `"${key}"`);
    await mkdir(join(dir, 'clean'));
    await writeFile(join(dir, 'clean', 'a.txt'), `nothing here but sk-tg-v1- and ${lookAlike}\n`);
  }, 200_000);

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('prints file:line and the masked key for every key in folders (recursively) and files, and exits 1', async () => {
    const result = await runCli(['keys', 'scan', dir], {});
    expect(result.code, result.stderr).toBe(1);
    const file = join(dir, 'src', 'deep', 'config.ts');
    expect(result.stdout.trim().split('\n')).toEqual([
      `${file}:3: ${maskKey(key)}`,
      `${file}:4: ${maskKey(other)}`,
      `${file}:4: ${maskKey(key)}`,
    ]);
    expect(result.stdout + result.stderr).not.toContain(key.slice(9));
    expect(result.stderr).toMatch(/found 3 Tollgate keys/);
  });

  it('follows a symbolic link it is given (a dangling one is a missing file), and says which links in a folder it did not follow', async () => {
    const links = await mkdtemp(join(tmpdir(), 'tollgate-scan-links-'));
    try {
      await symlink(join(dir, 'src'), join(links, 'current'));
      await symlink(join(dir, 'src', 'deep', 'config.ts'), join(links, 'linked.ts'));
      await symlink(join(links, 'nowhere'), join(links, 'dangling'));
      // Before, each of these exited 0 with nothing said (outside check).
      const folder = await runCli(['keys', 'scan', join(links, 'current')], {});
      expect(folder.code, folder.stderr).toBe(1);
      expect(folder.stdout.trim().split('\n')).toHaveLength(3);
      const file = await runCli(['keys', 'scan', join(links, 'linked.ts')], {});
      expect(file.code, file.stderr).toBe(1);
      const dangling = await runCli(['keys', 'scan', join(links, 'dangling')], {});
      expect(dangling.code).toBe(2);
      expect(dangling.stderr).toContain(`${join(links, 'dangling')}: not scanned (ENOENT)`);
      // Inside a folder a link is not followed (a loop, or another tree), and the scan says so.
      const inside = await runCli(['keys', 'scan', links], {});
      expect(inside.stderr).toContain(`${join(links, 'current')}: symbolic link, not followed`);
    } finally {
      await rm(links, { recursive: true, force: true });
    }
  });

  it('exits 0 when nothing is found (look-alikes with a bad checksum are ignored)', async () => {
    const result = await runCli(['keys', 'scan', join(dir, 'clean'), join(dir, 'README.md')], {});
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe('');
  });

  it('scans a file of any size, keys across its read chunks included, and exits 2 on a path it cannot read', async () => {
    // 17 MiB (past the 16 MiB the scan used to skip in silence): a key on line 1, one straddling the
    // first 1 MiB chunk boundary, one at the very end.
    const line = `${'x'.repeat(1023)}\n`;
    const lines = Array.from({ length: 17 * 1024 }, () => line);
    lines[0] = `${key}\n`;
    const boundary = 1024 * 1024 - 20; // the byte offset where the second key starts
    const big = lines.join('');
    const text = `${big.slice(0, boundary)}${other}${big.slice(boundary)}${key}`;
    const file = join(dir, 'big.log');
    await writeFile(file, text);
    const lineOf = (offset: number) => text.slice(0, offset).split('\n').length;
    const result = await runCli(['keys', 'scan', file], {});
    expect(result.code, result.stderr).toBe(1);
    expect(result.stdout.trim().split('\n')).toEqual([
      `${file}:1: ${maskKey(key)}`,
      `${file}:${lineOf(boundary)}: ${maskKey(other)}`,
      `${file}:${lineOf(text.length - key.length)}: ${maskKey(key)}`,
    ]);
    await rm(file);
    const missing = await runCli(['keys', 'scan', join(dir, 'clean'), join(dir, 'no-such-file')], {});
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no-such-file: not scanned (ENOENT)');
  });

  it('reads standard input without paths', () => {
    const found = spawnSync(process.execPath, [BIN, 'keys', 'scan'], {
      cwd: ROOT,
      input: `line one\nline two ${key}\n`,
      encoding: 'utf8',
    });
    expect(found.status).toBe(1);
    expect(found.stdout).toBe(`(stdin):2: ${maskKey(key)}\n`);
    const clean = spawnSync(process.execPath, [BIN, 'keys', 'scan', '-'], {
      cwd: ROOT,
      input: 'nothing',
      encoding: 'utf8',
    });
    expect(clean.status).toBe(0);
  });
});
