// Motor's TypeScript SDK. Producers and readers (`motor.events`), a
// producer's commands (`motor.commands`), an executor's calls
// (`motor.executor`), management (`motor.subscriptions`,
// `motor.deliveries`) and receivers (`Verifier`, `verifyMwV1`, …).
export { Motor } from './client.js';
export type { MotorOptions } from './http.js';
export { CursorExpiredError, MotorApiError, MotorConnectionError, MotorError } from './errors.js';
export type { AppendOptions, ListOptions, Page, StreamTokenOptions } from './events.js';
export type { PollOptions } from './executor.js';
export { EventStream } from './stream.js';
export type { ReconnectInfo, StreamOptions } from './stream.js';
export type { ReplayOptions } from './subscriptions.js';
export type { DeliveryFilter, RetryOptions } from './deliveries.js';
export type { CommandFilter, SendOptions, SubmitOptions } from './commands.js';
export * from './types.js';
export * from './webhooks/index.js';
export type { components, paths } from './openapi.js';
