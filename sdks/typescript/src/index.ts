// Motor's TypeScript SDK. Producers and readers (`motor.events`),
// management (`motor.subscriptions`, `motor.deliveries`) and receivers
// (`Verifier`, `verifyMwV1`, …). Commands are not covered yet: Motor has
// no commands API.
export { Motor } from './client.js';
export type { MotorOptions } from './http.js';
export { CursorExpiredError, MotorApiError, MotorConnectionError, MotorError } from './errors.js';
export type { AppendOptions, ListOptions, Page } from './events.js';
export { EventStream } from './stream.js';
export type { ReconnectInfo, StreamOptions } from './stream.js';
export type { ReplayOptions } from './subscriptions.js';
export type { DeliveryFilter, RetryOptions } from './deliveries.js';
export * from './types.js';
export * from './webhooks/index.js';
export type { components, paths } from './openapi.js';
