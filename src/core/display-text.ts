/**
 * Names people read — key names, the label an app gives its key, app titles — shown in the dashboard,
 * on the OAuth approval page and in mails. Control characters would break the line they are shown
 * on; bidirectional overrides and isolates (U+202A–202E, U+2066–2069) let a name render as something
 * it is not ("Budget helper \u202Egro.elgoog//:sptth" reads "Budget helper https://google.org"), and
 * zero-width characters let a name look empty or like another one.
 */

/** C0 and C1 controls, DEL, and the line and paragraph separators: each becomes a space. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const BREAKING = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/gu;
/**
 * Removed: the zero-width space, direction marks (U+200E, U+200F, the Arabic letter mark U+061C),
 * overrides and isolates, invisible operators, the BOM, the soft hyphen, the combining grapheme joiner,
 * the Hangul and Khmer fillers and the Mongolian vowel separator — characters that show nothing, or
 * reorder what is shown. Not the zero-width joiner and non-joiner, variation selectors or tag
 * characters, which emoji sequences and some scripts need.
 */
export const INVISIBLE =
  // eslint-disable-next-line no-misleading-character-class -- single invisible characters, listed one by one on purpose
  /[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b\u200e\u200f\u202a-\u202e\u2060-\u2069\u3164\uffa0\ufeff]/gu;
/** Nothing a reader would see: spaces, joiners, variation selectors, tags, the blank braille pattern. */
// eslint-disable-next-line no-misleading-character-class -- joiners and selectors one by one: a name made only of them
const BLANK = /^[\s\u200c\u200d\u2800\ufe00-\ufe0f\u{e0000}-\u{e007f}]*$/u;

/** The text as it can be shown: controls as spaces, invisible characters gone, runs of spaces as one, trimmed. */
export function displayText(raw: string): string {
  const text = raw.replace(BREAKING, ' ').replace(INVISIBLE, '').replace(/\s+/gu, ' ').trim();
  return BLANK.test(text) ? '' : text;
}
