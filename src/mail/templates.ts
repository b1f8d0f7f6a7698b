/**
 * Every message Tollgate sends, as small templates: a subject, a plain-text body and an HTML body
 * built from the same paragraphs. Values reach HTML only through `escapeHtml`. A key is always named by
 * its name and masked label; templates never receive the key itself.
 */
import { escapeHtml } from './html-escape.js';

export interface RenderedMail {
  subject: string;
  text: string;
  html: string;
}

/** A key as messages name it. */
export interface KeyNaming {
  name: string;
  label: string;
}

/** A paragraph: plain strings, or `{ link }` parts rendered as links in HTML and bare URLs in text. */
type Part = string | { link: string };
type Paragraph = Part[];

/**
 * Control characters (line breaks included) and bidirectional overrides in a value — a key's name, a
 * reporter's reason — become a space: a value cannot start a paragraph of its own in the text part
 * ("Click here to restore your key") or reorder what the reader sees.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE_IN_LINE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

function inLine(value: string): string {
  return value.replace(UNSAFE_IN_LINE, ' ');
}

function render(rawSubject: string, rawParagraphs: Paragraph[]): RenderedMail {
  const subject = inLine(rawSubject);
  const paragraphs = rawParagraphs.map((p) =>
    p.map((part) => (typeof part === 'string' ? inLine(part) : { link: inLine(part.link) })),
  );
  const text = paragraphs
    .map((p) => p.map((part) => (typeof part === 'string' ? part : part.link)).join(''))
    .join('\n\n');
  const body = paragraphs
    .map(
      (p) =>
        `<p>${p.map((part) => (typeof part === 'string' ? escapeHtml(part) : `<a href="${escapeHtml(part.link)}">${escapeHtml(part.link)}</a>`)).join('')}</p>`,
    )
    .join('\n');
  const html = `<!doctype html>\n<html><head><meta charset="utf-8"><title>${escapeHtml(subject)}</title></head>\n<body style="font-family: sans-serif; line-height: 1.5">\n${body}\n<p style="color: #666">— Tollgate</p>\n</body></html>\n`;
  return { subject, text: `${text}\n\n— Tollgate\n`, html };
}

function keyName(key: KeyNaming): string {
  return `"${key.name}" (${key.label})`;
}

/** Only http(s) URLs become links; anything else is shown as text. */
function linkOrText(url: string): Part {
  return /^https?:\/\/[^\s]+$/i.test(url) ? { link: url } : url;
}

/** The dashboard's address (`mail.public_url`), or null when the operator set none. */
export type Dashboard = string | null;

/** Where in the dashboard to act: a link when its address is known, else the page's name. */
function goTo(dashboard: Dashboard, page: 'keys' | 'credits' | 'settings', what: string): Paragraph {
  const name = { keys: 'API keys', credits: 'Credits', settings: 'Settings' }[page];
  if (dashboard === null) return [`${what}: the dashboard's ${name} page.`];
  return [`${what}: `, { link: `${dashboard.replace(/\/+$/, '')}/${page}` }];
}

/** The end of every notice an account holder can turn off (Settings → notifications). */
function turnOff(dashboard: Dashboard): Paragraph {
  return goTo(dashboard, 'settings', 'To change or turn off these notices');
}

const REPLACE_KEY =
  'Delete this key and create a new one for the applications that used it: it can never be enabled again. Review your usage for requests you did not make.';

export function keyCompromisedMail(input: {
  key: KeyNaming;
  /** A code host's scan found it, or the gateway's operator marked it (whatever the report said of where). */
  reportedBy: 'scanner' | 'operator';
  url: string | null;
  source: string | null;
  reason: string | null;
  dashboard: Dashboard;
}): RenderedMail {
  const where: Paragraph[] = [];
  if (input.url) where.push(['Where it was found: ', linkOrText(input.url)]);
  // A code host's `source` says where in it the key was (content, a commit, an issue…), not who reported it.
  if (input.source) where.push([`Found in: ${input.source}`]);
  if (input.reason) where.push([`Reason: ${input.reason}`]);
  const name = keyName(input.key);
  const how =
    input.reportedBy === 'operator'
      ? `The operator of this gateway reported your API key ${name} as exposed, so it has been disabled.`
      : `Your API key ${name} was found where others can read it, so we disabled it.`;
  return render(`Your Tollgate API key ${input.key.label} was exposed and has been disabled`, [
    [`${how} Requests made with it are refused from now on.`],
    ...where,
    [REPLACE_KEY],
    goTo(input.dashboard, 'keys', 'Your keys'),
  ]);
}

export function keyInRequestMail(input: {
  key: KeyNaming;
  action: 'redact' | 'block';
  /** What the key can do now: the advice differs for a key that no longer works. */
  state: 'enabled' | 'disabled' | 'expired';
  dashboard: Dashboard;
}): RenderedMail {
  const handled =
    input.action === 'redact'
      ? 'We replaced it by its masked label before the request was forwarded to the model provider.'
      : 'We refused that request, so it was not forwarded to the model provider.';
  const advice =
    input.state === 'enabled'
      ? 'The key is still enabled. If you did not expect it to be shared (for example in a prompt, a log or a document sent to a model), delete it and create a new one.'
      : `The key is ${input.state === 'disabled' ? 'disabled' : 'expired'}, so requests made with it are refused; delete it if you no longer need it. If you did not expect it to be shared, check where it was copied from.`;
  return render(`Your Tollgate API key ${input.key.label} appeared inside a chat request`, [
    [
      `Your API key ${keyName(input.key)} was pasted into the content of a chat request sent to this gateway. ${handled}`,
    ],
    [advice],
    goTo(input.dashboard, 'keys', 'Your keys'),
  ]);
}

export function lowBalanceMail(input: {
  balanceUsd: string;
  thresholdUsd: string;
  dashboard: Dashboard;
}): RenderedMail {
  return render(`Your Tollgate balance is below ${input.thresholdUsd} USD`, [
    [
      `Your account's credit balance is ${input.balanceUsd} USD, below your alert threshold of ${input.thresholdUsd} USD.`,
    ],
    [
      'Requests to paid models are refused once the balance reaches zero. Add credits to keep them running. You will not hear about this again until credits are added.',
    ],
    goTo(input.dashboard, 'credits', 'Your balance and credit history'),
    turnOff(input.dashboard),
  ]);
}

export function keyLimitMail(input: {
  key: KeyNaming;
  percent: 80 | 100;
  limitUsd: string;
  usedUsd: string;
  window: string;
  /** The limit starts again each day, week or month; a total limit never does. */
  resets: boolean;
  dashboard: Dashboard;
}): RenderedMail {
  const until = input.resets ? 'until the window resets or the limit is raised' : 'until the limit is raised';
  const reached =
    input.percent === 100
      ? `Its requests are refused (402) ${until}.`
      : `Requests are refused once the limit is reached, ${until}.`;
  return render(`Your Tollgate API key ${input.key.label} has used ${input.percent} % of its ${input.window} limit`, [
    [
      `Your API key ${keyName(input.key)} has used ${input.usedUsd} USD of its ${input.window} limit of ${input.limitUsd} USD.`,
    ],
    [reached],
    goTo(input.dashboard, 'keys', 'Your keys and their limits'),
    turnOff(input.dashboard),
  ]);
}

export function keyExpiryMail(input: { key: KeyNaming; expiresAt: string; dashboard: Dashboard }): RenderedMail {
  return render(`Your Tollgate API key ${input.key.label} expires on ${input.expiresAt.slice(0, 10)}`, [
    [`Your API key ${keyName(input.key)} expires at ${input.expiresAt}. After that its requests are refused.`],
    ['Create a new key before then and switch your applications over to it.'],
    goTo(input.dashboard, 'keys', 'Your keys'),
    turnOff(input.dashboard),
  ]);
}

export function passwordResetMail(input: { link: string; minutes: number }): RenderedMail {
  return render('Reset your Tollgate password', [
    [
      'Someone (hopefully you) asked to reset the password of your Tollgate account. Open this link to choose a new one:',
    ],
    [{ link: input.link }],
    [
      `The link works once and expires in ${input.minutes} minutes. If you did not ask for it, ignore this message: your password stays as it is.`,
    ],
  ]);
}
