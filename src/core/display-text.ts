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
 * Unicode's default-ignorable code points (`\p{Default_Ignorable_Code_Point}`: the zero-width space,
 * direction marks, overrides and isolates, invisible operators, the BOM, the soft hyphen, fillers,
 * format controls of every script), which show nothing or reorder what is shown, are removed — all
 * but those a visible text needs (KEEP). A list by hand missed some each time (outside checks).
 */
const IGNORABLE = /\p{Default_Ignorable_Code_Point}/gu;
/**
 * Kept: the zero-width joiner and non-joiner (emoji sequences, Persian, Indic scripts), variation
 * selectors (❤️, Mongolian's free variation selectors), tags (subdivision flags) and the Mongolian
 * vowel separator (it shapes the letters around it).
 */
// eslint-disable-next-line no-misleading-character-class -- joiners and selectors one by one, on purpose
const KEEP = /^[\u200c\u200d\u180b-\u180f\ufe00-\ufe0f\u{e0000}-\u{e0fff}]$/u;

/** The text without its invisible characters (KEEP aside). */
export function withoutInvisible(text: string): string {
  return text.replace(IGNORABLE, (c) => (KEEP.test(c) ? c : ''));
}

/** Nothing a reader would see: spaces, format characters, what KEEP keeps, the blank braille pattern. */
// eslint-disable-next-line no-misleading-character-class -- joiners and selectors one by one: a name made only of them
const BLANK = /^[\s\p{Cf}\p{Default_Ignorable_Code_Point}\u2800\u{16fe4}]*$/u;

/** The text as it can be shown: controls as spaces, invisible characters gone, runs of spaces as one, trimmed. */
export function displayText(raw: string): string {
  const text = withoutInvisible(raw.replace(BREAKING, ' ')).replace(/\s+/gu, ' ').trim();
  return BLANK.test(text) ? '' : text;
}
