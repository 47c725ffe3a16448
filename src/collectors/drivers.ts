// The kinds of collector this build has: one line per driver.

import type { CollectorDriver } from './driver.js';
import { mqttDriver } from './mqtt/driver.js';
import { opcuaDriver } from './opcua/driver.js';

export const DRIVERS: ReadonlyMap<string, CollectorDriver> = new Map<string, CollectorDriver>([
  ['mqtt', mqttDriver],
  ['opcua', opcuaDriver],
]);
