/**
 * Where the CLI takes the admin token from. A command-line flag is visible to every user of the
 * machine (`ps`, /proc/<pid>/cmdline) and lands in shell history, so the environment
 * (TOLLGATE_ADMIN_TOKEN) comes first in the docs, then a prompt that does not echo; `--admin-token`
 * still works, with a warning on stderr.
 */
import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';

export interface TokenSourceIo {
  stdin: NodeJS.ReadStream;
  stderr: NodeJS.WritableStream;
}

export const ADMIN_TOKEN_FLAG_WARNING =
  'tollgate: warning: --admin-token makes the token visible to other users of this machine (process list, shell history); set TOLLGATE_ADMIN_TOKEN instead, or omit both to be prompted\n';

/** Reads one line from a terminal without echoing it. */
function promptHidden(question: string, io: TokenSourceIo): Promise<string> {
  io.stderr.write(question);
  const silent = new Writable({ write: (_chunk, _encoding, done) => done() });
  const rl = createInterface({ input: io.stdin, output: silent, terminal: true });
  return new Promise((resolve) => {
    rl.once('line', (line) => {
      resolve(line.trim());
      io.stderr.write('\n');
      rl.close();
    });
    rl.once('close', () => resolve(''));
  });
}

export function adminTokenSource(
  flag: string | undefined,
  env: NodeJS.ProcessEnv,
  io: TokenSourceIo = { stdin: process.stdin, stderr: process.stderr },
): () => Promise<string | undefined> {
  let resolved: Promise<string | undefined> | null = null;
  return () => {
    resolved ??= (async () => {
      if (flag !== undefined) {
        io.stderr.write(ADMIN_TOKEN_FLAG_WARNING);
        return flag;
      }
      if (env.TOLLGATE_ADMIN_TOKEN) return env.TOLLGATE_ADMIN_TOKEN;
      if (io.stdin.isTTY) return (await promptHidden('Admin token: ', io)) || undefined;
      return undefined;
    })();
    return resolved;
  };
}
