/** A location inside a request body as callers write it: `messages[3].content[0].text`. */
export type InputPath = readonly PropertyKey[];

export function formatInputPath(path: InputPath): string {
  let text = '';
  for (const segment of path) {
    if (typeof segment === 'number') text += `[${segment}]`;
    else text += text === '' ? String(segment) : `.${String(segment)}`;
  }
  return text === '' ? 'body' : text;
}
