// The OPC UA collector driver (WIRE.md part 3 "Plant collectors"): checks a definition before it
// is saved and starts collectors. node-opcua itself is loaded only when one starts (library.ts).

import type { CollectorDriver } from '../driver.js';
import { opcuaApplicationCertificatePem } from './app-certificate.js';
import { OpcuaCollector } from './collector.js';
import { parseConnection, parseItems } from './config.js';

export const opcuaDriver: CollectorDriver = {
  kind: 'opcua',
  secretFields: ['password', 'private_key_pem'],
  validate(connection, items) {
    const parsed = parseConnection(connection);
    parseItems(items, parsed.publishingIntervalMs);
  },
  applicationCertificatePem(env) {
    return opcuaApplicationCertificatePem(env.secretsDir);
  },
  start(definition, sink, env) {
    const collector = new OpcuaCollector(definition, sink, env);
    collector.begin();
    return collector;
  },
};
