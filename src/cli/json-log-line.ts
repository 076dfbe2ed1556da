import type { BrokerLogFields } from '../broker/broker-options.js';

/**
 * One log line of `broker serve --log-format json`: the time, the level (`warn` unless the line says), the
 * message and the line's fields, as one JSON object, so a log collector needs no parsing rules.
 */
export function formatJsonLogLine(message: string, fields: BrokerLogFields | undefined, time: Date): string {
  const { level = 'warn', ...rest } = fields ?? {};
  return JSON.stringify({ time: time.toISOString(), level, msg: message, ...rest });
}
