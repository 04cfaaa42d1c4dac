// The client: one Transport (base URL, token, fetch) shared by the
// resources, `motor.events`, `motor.commands`, `motor.subscriptions`,
// `motor.deliveries`, `motor.executor`.
import { Commands } from './commands.js';
import { Deliveries } from './deliveries.js';
import { Events } from './events.js';
import { Executor } from './executor.js';
import { Transport, type MotorOptions } from './http.js';
import { Subscriptions } from './subscriptions.js';

export class Motor {
  readonly events: Events;
  readonly commands: Commands;
  readonly subscriptions: Subscriptions;
  readonly deliveries: Deliveries;
  readonly executor: Executor;

  constructor(options: MotorOptions) {
    const http = new Transport(options);
    this.events = new Events(http);
    this.commands = new Commands(http);
    this.subscriptions = new Subscriptions(http);
    this.deliveries = new Deliveries(http);
    this.executor = new Executor(http);
  }
}
