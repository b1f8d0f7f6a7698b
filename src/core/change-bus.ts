/**
 * Cache invalidation across processes: "key <hash> changed", "account <id> changed", "byok <account
 * id> changed" (the account's provider keys). The embedded
 * deployment uses the in-process bus; a scaled-out one plugs a shared implementation in (`store/`).
 */
export const CHANGE_TOPICS = ['key', 'account', 'byok'] as const;
/**
 * The id that means "any id of this topic may have changed": delivered for every topic when a shared
 * bus (re)connects, since whatever was published while it was not listening is lost. Subscribers
 * forget everything they cache for the topic.
 */
export const ALL_IDS = '*';
export type ChangeTopic = (typeof CHANGE_TOPICS)[number];
export type ChangeHandler = (topic: ChangeTopic, id: string) => void;

export interface ChangeBus {
  publish(topic: ChangeTopic, id: string): Promise<void>;
  subscribe(handler: ChangeHandler): void;
  close(): Promise<void>;
}

export class LocalChangeBus implements ChangeBus {
  private readonly handlers: ChangeHandler[] = [];

  async publish(topic: ChangeTopic, id: string): Promise<void> {
    for (const handler of this.handlers) handler(topic, id);
  }

  subscribe(handler: ChangeHandler): void {
    this.handlers.push(handler);
  }

  async close(): Promise<void> {
    this.handlers.length = 0;
  }
}
