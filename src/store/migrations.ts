/**
 * The schema, as ordered versions. Each text runs unchanged on SQLite and PostgreSQL: timestamps and
 * money are BIGINT (epoch ms, 1e-9 USD units), booleans INTEGER 0/1, JSON TEXT. Never edit a released
 * version; append a new one.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'initial',
    sql: `
CREATE TABLE accounts (
  id TEXT PRIMARY KEY,
  email TEXT NOT NULL UNIQUE,
  password_hash TEXT,
  created_at BIGINT NOT NULL,
  total_credits BIGINT NOT NULL DEFAULT 0,
  total_purchased BIGINT NOT NULL DEFAULT 0,
  total_usage BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE credit_entries (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  kind TEXT NOT NULL CHECK (kind IN ('purchase', 'grant', 'adjustment')),
  amount BIGINT NOT NULL,
  reference TEXT,
  created_at BIGINT NOT NULL,
  UNIQUE (account_id, reference)
);
CREATE INDEX credit_entries_account_created ON credit_entries (account_id, created_at);

CREATE TABLE api_keys (
  hash TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  name TEXT NOT NULL,
  label TEXT NOT NULL,
  is_management INTEGER NOT NULL DEFAULT 0,
  disabled INTEGER NOT NULL DEFAULT 0,
  limit_amount BIGINT,
  limit_reset TEXT CHECK (limit_reset IN ('daily', 'weekly', 'monthly')),
  include_byok_in_limit INTEGER NOT NULL DEFAULT 0,
  expires_at BIGINT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT,
  deleted_at BIGINT,
  creator_user_id TEXT,
  external_user TEXT,
  workspace_id TEXT NOT NULL,
  allowed_models TEXT,
  allowed_providers TEXT,
  compromised_at BIGINT
);
CREATE INDEX api_keys_account_created ON api_keys (account_id, created_at DESC, hash DESC);

CREATE TABLE key_usage (
  key_hash TEXT NOT NULL,
  period TEXT NOT NULL,
  usage BIGINT NOT NULL DEFAULT 0,
  byok_usage BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (key_hash, period)
);

CREATE TABLE generations (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  key_hash TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  model TEXT NOT NULL,
  provider_name TEXT,
  total_cost BIGINT NOT NULL,
  is_byok INTEGER NOT NULL,
  streamed INTEGER NOT NULL,
  finish_reason TEXT,
  tokens_prompt BIGINT NOT NULL,
  tokens_completion BIGINT NOT NULL,
  details TEXT NOT NULL
);
CREATE INDEX generations_account_created ON generations (account_id, created_at);
`,
  },
  {
    version: 2,
    name: 'byok_keys',
    sql: `
CREATE TABLE byok_keys (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  provider TEXT NOT NULL,
  name TEXT,
  label TEXT NOT NULL,
  ciphertext TEXT NOT NULL,
  disabled INTEGER NOT NULL DEFAULT 0,
  is_fallback INTEGER NOT NULL DEFAULT 0,
  is_required INTEGER NOT NULL DEFAULT 0,
  sort_order INTEGER NOT NULL DEFAULT 0,
  allowed_models TEXT,
  allowed_api_key_hashes TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT,
  deleted_at BIGINT
);
CREATE INDEX byok_keys_account ON byok_keys (account_id, created_at);
`,
  },
  {
    version: 3,
    name: 'sessions_and_oauth',
    sql: `
CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  token_hash TEXT NOT NULL UNIQUE,
  account_id TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  last_seen_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  revoked_at BIGINT
);
CREATE INDEX sessions_account ON sessions (account_id);

CREATE TABLE oauth_apps (
  id BIGINT PRIMARY KEY,
  origin TEXT NOT NULL UNIQUE,
  created_at BIGINT NOT NULL
);

CREATE TABLE oauth_codes (
  code_hash TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  app_id BIGINT NOT NULL,
  app_name TEXT NOT NULL,
  callback_url TEXT,
  code_challenge TEXT,
  code_challenge_method TEXT CHECK (code_challenge_method IN ('S256', 'plain')),
  key_label TEXT,
  limit_amount BIGINT,
  limit_reset TEXT CHECK (limit_reset IN ('daily', 'weekly', 'monthly')),
  key_expires_at BIGINT,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  used_at BIGINT
);
CREATE INDEX oauth_codes_expires ON oauth_codes (expires_at);

CREATE TABLE oauth_grants (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  app_id BIGINT NOT NULL,
  app_name TEXT NOT NULL,
  key_hash TEXT NOT NULL UNIQUE,
  created_at BIGINT NOT NULL
);
CREATE INDEX oauth_grants_account ON oauth_grants (account_id, created_at);
`,
  },
  {
    version: 4,
    name: 'usage_rollups',
    // Per account × UTC day × model × provider × key × app, written in the charge's transaction, so
    // the dashboard, /activity and rankings never scan generations. Besides the full detail (keyed
    // by key first: a key filter is an index range), two coarser rollups answer the unfiltered views
    // without summing the detail: by model and provider (/activity, the dashboard by model) and by
    // key and app (the dashboard by key or app). Each primary key is its query's grouping order.
    // app_id 0 = no app (NULL would defeat the primary key's uniqueness); provider_name '' = unknown.
    // The two public tables carry no account and no money: rankings read only them.
    sql: `
CREATE TABLE usage_apps (
  id BIGINT PRIMARY KEY,
  app_key TEXT NOT NULL UNIQUE,
  origin TEXT NOT NULL,
  name TEXT NOT NULL,
  titled INTEGER NOT NULL,
  created_at BIGINT NOT NULL
);

CREATE TABLE usage_app_accounts (
  app_id BIGINT NOT NULL,
  account_id TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (app_id, account_id)
);

CREATE TABLE usage_rollups (
  account_id TEXT NOT NULL,
  key_hash TEXT NOT NULL,
  day TEXT NOT NULL,
  model TEXT NOT NULL,
  provider_name TEXT NOT NULL,
  app_id BIGINT NOT NULL,
  usage BIGINT NOT NULL,
  byok_usage BIGINT NOT NULL,
  requests BIGINT NOT NULL,
  prompt_tokens BIGINT NOT NULL,
  completion_tokens BIGINT NOT NULL,
  reasoning_tokens BIGINT NOT NULL,
  PRIMARY KEY (account_id, key_hash, day, model, provider_name, app_id)
);

CREATE TABLE usage_rollups_model (
  account_id TEXT NOT NULL,
  day TEXT NOT NULL,
  model TEXT NOT NULL,
  provider_name TEXT NOT NULL,
  usage BIGINT NOT NULL,
  byok_usage BIGINT NOT NULL,
  requests BIGINT NOT NULL,
  prompt_tokens BIGINT NOT NULL,
  completion_tokens BIGINT NOT NULL,
  reasoning_tokens BIGINT NOT NULL,
  PRIMARY KEY (account_id, day, model, provider_name)
);

CREATE TABLE usage_rollups_source (
  account_id TEXT NOT NULL,
  day TEXT NOT NULL,
  key_hash TEXT NOT NULL,
  app_id BIGINT NOT NULL,
  usage BIGINT NOT NULL,
  byok_usage BIGINT NOT NULL,
  requests BIGINT NOT NULL,
  prompt_tokens BIGINT NOT NULL,
  completion_tokens BIGINT NOT NULL,
  reasoning_tokens BIGINT NOT NULL,
  PRIMARY KEY (account_id, day, key_hash, app_id)
);

CREATE TABLE usage_app_daily (
  day TEXT NOT NULL,
  app_id BIGINT NOT NULL,
  requests BIGINT NOT NULL,
  prompt_tokens BIGINT NOT NULL,
  completion_tokens BIGINT NOT NULL,
  PRIMARY KEY (day, app_id)
);

CREATE TABLE usage_model_daily (
  day TEXT NOT NULL,
  model TEXT NOT NULL,
  requests BIGINT NOT NULL,
  prompt_tokens BIGINT NOT NULL,
  completion_tokens BIGINT NOT NULL,
  PRIMARY KEY (day, model)
);
`,
  },
  {
    version: 5,
    name: 'mail_outbox_and_notifications',
    sql: `
CREATE TABLE mail_outbox (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  dedupe_key TEXT UNIQUE,
  account_id TEXT,
  recipient TEXT NOT NULL,
  subject TEXT NOT NULL,
  text_body TEXT NOT NULL,
  html_body TEXT NOT NULL,
  message_id TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at BIGINT NOT NULL,
  lease_owner TEXT,
  lease_until BIGINT,
  sent_at BIGINT,
  failed_at BIGINT,
  last_error TEXT
);
CREATE INDEX mail_outbox_due ON mail_outbox (next_attempt_at) WHERE sent_at IS NULL AND failed_at IS NULL;

CREATE TABLE notification_settings (
  account_id TEXT PRIMARY KEY,
  low_balance_enabled INTEGER NOT NULL DEFAULT 1,
  low_balance_threshold BIGINT,
  key_limit_enabled INTEGER NOT NULL DEFAULT 1,
  key_expiry_enabled INTEGER NOT NULL DEFAULT 1,
  updated_at BIGINT NOT NULL
);

CREATE TABLE password_reset_tokens (
  token_hash TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  used_at BIGINT
);
CREATE INDEX password_reset_tokens_account ON password_reset_tokens (account_id);
`,
  },
  {
    version: 6,
    name: 'sign_in_addresses',
    sql: `
CREATE TABLE sign_in_addresses (
  account_id TEXT NOT NULL,
  address_hash TEXT NOT NULL,
  last_success_at BIGINT NOT NULL,
  PRIMARY KEY (account_id, address_hash)
);
CREATE INDEX sign_in_addresses_age ON sign_in_addresses (last_success_at);
`,
  },
  {
    // Version 6 stored a plain SHA-256 of the address, which gives it back (2^32 IPv4 candidates);
    // one build of main briefly shipped version 6 with this column instead. Either way the rows go:
    // they are 30-day hints, and the old ones must not stay.
    version: 7,
    name: 'sign_in_address_tags',
    sql: `
DROP TABLE sign_in_addresses;
CREATE TABLE sign_in_addresses (
  account_id TEXT NOT NULL,
  address_tag TEXT NOT NULL,
  last_success_at BIGINT NOT NULL,
  PRIMARY KEY (account_id, address_tag)
);
CREATE INDEX sign_in_addresses_age ON sign_in_addresses (last_success_at);
`,
  },
  {
    // A reset token names the message that carries it, so giving the message up voids the token.
    // Tokens issued before are linked through their message's dedupe key (the token's 5-minute
    // window); reset messages given up before lose their bodies and their tokens, as they now would.
    version: 8,
    name: 'password_reset_token_message',
    sql: `
ALTER TABLE password_reset_tokens ADD COLUMN message_id TEXT;
UPDATE password_reset_tokens SET message_id = (
  SELECT o.id FROM mail_outbox o
  WHERE o.dedupe_key = 'password_reset:' || password_reset_tokens.account_id || ':' || CAST(password_reset_tokens.created_at / 300000 AS TEXT)
);
CREATE INDEX password_reset_tokens_message ON password_reset_tokens (message_id);
UPDATE password_reset_tokens SET used_at = (SELECT o.failed_at FROM mail_outbox o WHERE o.id = password_reset_tokens.message_id)
WHERE used_at IS NULL AND message_id IN (SELECT id FROM mail_outbox WHERE failed_at IS NOT NULL);
UPDATE mail_outbox SET text_body = '', html_body = '' WHERE kind = 'password_reset' AND failed_at IS NOT NULL;
`,
  },
  {
    // What each gateway process held per account and per key when Redis stopped being trusted
    // (billing/credit-gate.ts): the others' holds, which only Redis knew, for the shares of the outage.
    // `subject` is 'a:<account id>' or 'k:<key hash>'; '' is the row saying the process reported.
    version: 9,
    name: 'outage_holds',
    sql: `
CREATE TABLE outage_holds (
  process_id TEXT NOT NULL,
  subject TEXT NOT NULL,
  amount BIGINT NOT NULL,
  reported_at BIGINT NOT NULL,
  PRIMARY KEY (process_id, subject)
);
CREATE INDEX outage_holds_subject ON outage_holds (subject, reported_at);
`,
  },
];
