/** Shapes of the gateway's answers (docs/api.md and the dashboard contract), as the dashboard reads them. */

export interface Session {
  account: { id: string; email: string };
  csrf_token: string;
  expires_at: string;
}

export interface Account {
  id: string;
  email: string;
  created_at: string;
  balance: number;
  total_credits: number;
  total_purchased: number;
  total_granted: number;
  total_usage: number;
  is_free_tier: boolean;
  /** Today's (UTC) free-model requests; null when the gateway serves no free model. */
  free_model_daily_requests: { limit: number; used: number; remaining: number } | null;
}

export type LimitReset = 'daily' | 'weekly' | 'monthly';

export interface ApiKey {
  hash: string;
  name: string;
  label: string;
  disabled: boolean;
  limit: number | null;
  limit_remaining: number | null;
  limit_reset: LimitReset | null;
  include_byok_in_limit: boolean;
  usage: number;
  usage_daily: number;
  usage_weekly: number;
  usage_monthly: number;
  created_at: string;
  updated_at: string | null;
  expires_at?: string | null;
  is_management_key?: boolean;
  app?: { id: string; name: string; origin: string } | null;
  /** Reported exposed: disabled for good. */
  compromised?: boolean;
}

export interface CreditEntry {
  id: string;
  kind: 'purchase' | 'grant' | 'adjustment';
  amount: number;
  reference: string | null;
  created_at: string;
}

export interface DailyActivity {
  date: string;
  group: string;
  group_label: string;
  usage: number;
  byok_usage: number;
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  reasoning_tokens: number;
}

export interface GenerationRow {
  id: string;
  created_at: string;
  model: string;
  provider_name: string | null;
  app: { name: string; origin: string } | null;
  key_label: string | null;
  key_name: string | null;
  tokens_prompt: number | null;
  tokens_completion: number | null;
  total_cost: number;
  latency: number | null;
  finish_reason: string | null;
  streamed: boolean | null;
}

export interface AppAuthorization {
  id: string;
  app: { id: number; name: string; origin: string };
  key_hash: string;
  key_label: string;
  limit: number | null;
  limit_reset: LimitReset | null;
  created_at: string;
  expires_at: string | null;
  disabled: boolean;
}

export interface Notifications {
  low_balance: { enabled: boolean; threshold: number | null };
  key_limit: { enabled: boolean };
  key_expiry: { enabled: boolean };
}

export interface AuthorizeRequest {
  app: { origin: string; name: string };
  callback_url: string;
  key_label: string | null;
  code_challenge_method: string | null;
  limit: number | null;
  usage_limit_type: 'daily' | 'weekly' | 'monthly' | null;
  expires_at: string | null;
}

export type RankingPeriod = 'day' | 'week' | 'month';

export interface RankingSummary {
  period: RankingPeriod;
  start_date: string;
  end_date: string;
  apps: { rank: number; name: string; origin: string; total_tokens: number; requests: number }[];
  models: { rank: number; model: string; name: string; total_tokens: number; requests: number }[];
}
