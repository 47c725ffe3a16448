// The OPC UA test server, run as a child process by test/support/opcua-server.ts so a test can kill
// and restart it like a real plant server. Its one argument is a JSON OpcuaServerOptions. It prints
// one JSON line `{"ready":…}` once it listens, then runs until killed (SIGTERM shuts it down).
//
// Address space: Objects/Plant/Line00…LineNN, each with `variables / lines` numeric variables
// (kinds by index: Double ×4, Int32 ×3, Boolean, UInt16, Float of every 10), a String `Label`
// (not numeric: browsing skips it) and a subfolder `Info` with a Double `Setpoint` (a browse goes
// deeper than one level). NodeIds are `ns=1;s=Plant.Line03.D017`. Every 200th variable goes Bad
// on every other change, every 250th Uncertain. Values change every 100–500 ms (or `periodMs`),
// each new value is the variable's change count (so a value tells how many changes came before).

import fs from 'node:fs';
import path from 'node:path';
import { DataType, MessageSecurityMode, SecurityPolicy, StatusCodes, Variant, setErrorLogger, setWarningLogger, type StatusCode } from 'node-opcua-client';
import { OPCUACertificateManager } from 'node-opcua-certificate-manager';
import { OPCUAServer } from 'node-opcua-server';
import { variableInfo, type OpcuaServerOptions } from './opcua-server.js';

const KINDS = [
  { prefix: 'D', dataType: DataType.Double, make: (n: number) => n + 0.5 },
  { prefix: 'D', dataType: DataType.Double, make: (n: number) => n + 0.25 },
  { prefix: 'D', dataType: DataType.Double, make: (n: number) => -n - 0.5 },
  { prefix: 'D', dataType: DataType.Double, make: (n: number) => n * 2 },
  { prefix: 'I', dataType: DataType.Int32, make: (n: number) => n },
  { prefix: 'I', dataType: DataType.Int32, make: (n: number) => -n },
  { prefix: 'I', dataType: DataType.Int32, make: (n: number) => n * 3 },
  { prefix: 'B', dataType: DataType.Boolean, make: (n: number) => n % 2 === 1 },
  { prefix: 'U', dataType: DataType.UInt16, make: (n: number) => n % 65536 },
  { prefix: 'F', dataType: DataType.Float, make: (n: number) => n + 0.5 },
] as const;

async function main(): Promise<void> {
  // node-opcua's own messages to stderr: stdout carries the ready line.
  setWarningLogger((_c: unknown, ...args: unknown[]) => process.stderr.write(`${args.join(' ')}\n`));
  setErrorLogger((_c: unknown, ...args: unknown[]) => process.stderr.write(`${args.join(' ')}\n`));
  const opts = JSON.parse(process.argv[2]!) as OpcuaServerOptions;
  const pki = new OPCUACertificateManager({ rootFolder: path.join(opts.pkiDir, 'server'), automaticallyAcceptUnknownCertificate: false });
  const userPki = new OPCUACertificateManager({ rootFolder: path.join(opts.pkiDir, 'users'), automaticallyAcceptUnknownCertificate: false });
  await pki.initialize();
  await userPki.initialize();
  for (const pem of opts.trustedClientPems ?? []) await pki.trustCertificate(pemToDer(pem));
  for (const pem of opts.trustedUserPems ?? []) await userPki.trustCertificate(pemToDer(pem));

  const users = opts.users ?? {};
  const server = new OPCUAServer({
    port: opts.port,
    hostname: '127.0.0.1',
    resourcePath: '/UA/Test',
    serverCertificateManager: pki,
    userCertificateManager: userPki,
    allowAnonymous: opts.allowAnonymous ?? true,
    securityModes: (opts.securityModes ?? ['None', 'Sign', 'SignAndEncrypt']).map((m) => MessageSecurityMode[m]),
    securityPolicies: (opts.securityPolicies ?? ['None', 'Basic256Sha256']).map((p) => SecurityPolicy[p]),
    userManager: { isValidUser: (username: string, password: string) => users[username] !== undefined && users[username] === password },
    serverInfo: { applicationUri: 'urn:historian-test:opcua-server', productUri: 'historian-test', applicationName: { text: 'historian test server' } },
    buildInfo: { productName: 'historian-test', buildNumber: '1', buildDate: new Date(0) },
  });
  await server.initialize();
  const addressSpace = server.engine.addressSpace!;
  const namespace = addressSpace.getOwnNamespace();
  const plant = namespace.addFolder(addressSpace.rootFolder.objects, { browseName: 'Plant', nodeId: 's=Plant' });
  const lines = opts.lines ?? 10;
  const setpointTs = Math.floor(Date.now() / 60_000) * 60_000 - 60_000;
  const total = opts.variables ?? 1000;
  const lineFolders = Array.from({ length: lines }, (_, l) => {
    const lineName = `Line${String(l).padStart(2, '0')}`;
    const folder = namespace.addFolder(plant, { browseName: lineName, nodeId: `s=Plant.${lineName}` });
    namespace.addVariable({ componentOf: folder, browseName: 'Label', nodeId: `s=Plant.${lineName}.Label`, dataType: 'String', value: { dataType: DataType.String, value: lineName } });
    const info = namespace.addFolder(folder, { browseName: 'Info', nodeId: `s=Plant.${lineName}.Info` });
    const setpoint = namespace.addVariable({ componentOf: info, browseName: 'Setpoint', nodeId: `s=Plant.${lineName}.Info.Setpoint`, dataType: 'Double' });
    // A value that never changes, with a source timestamp the tests know: stored points must carry exactly it.
    setpoint.setValueFromSource(new Variant({ dataType: DataType.Double, value: 42 + l }), StatusCodes.Good, new Date(setpointTs));
    return folder;
  });

  const variables = Array.from({ length: total }, (_, i) => {
    const info = variableInfo(i, total, lines);
    const kind = KINDS[i % KINDS.length]!;
    const [lineName, name] = info.path.split('/') as [string, string];
    const node = namespace.addVariable({
      componentOf: lineFolders[Number(lineName.slice(4))]!,
      browseName: name,
      nodeId: info.nodeId.slice('ns=1;'.length),
      dataType: DataType[kind.dataType],
      historizing: opts.historize === true,
    });
    if (opts.historize) addressSpace.installHistoricalDataNode(node, { maxOnlineValues: 200_000 });
    const period = opts.periodMs ?? 100 * (1 + (i % 5));
    return { info, kind, node, period, changes: 0 };
  });

  const faults = opts.faults ?? true;
  const set = (v: (typeof variables)[number]): void => {
    v.changes++;
    let status: StatusCode = StatusCodes.Good;
    if (faults && v.info.bad && v.changes % 2 === 0) status = StatusCodes.BadSensorFailure;
    else if (faults && v.info.uncertain && v.changes % 2 === 0) status = StatusCodes.UncertainLastUsableValue;
    v.node.setValueFromSource(new Variant({ dataType: v.kind.dataType, value: v.kind.make(v.changes) }), status, new Date());
  };
  for (const v of variables) set(v);

  // One timer for all: a tick every 100 ms (or periodMs) changes the variables whose period is due.
  const tickMs = opts.periodMs ?? 100;
  let tick = 0;
  const timer = setInterval(() => {
    tick++;
    const now = tick * tickMs;
    for (const v of variables) if (now % v.period === 0) set(v);
  }, tickMs);

  await server.start();
  const certificate = server.getCertificate();
  const ready = {
    ready: true,
    endpointUrl: `opc.tcp://127.0.0.1:${opts.port}/UA/Test`,
    certificatePem: derToPem(certificate),
    setpointTs,
  };
  process.stdout.write(`${JSON.stringify(ready)}\n`);

  const stop = async (): Promise<void> => {
    clearInterval(timer);
    await server.shutdown(0);
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
}

function pemToDer(pem: string): Buffer {
  return Buffer.from(pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
}

function derToPem(der: Buffer): string {
  return `-----BEGIN CERTIFICATE-----\n${der.toString('base64').replace(/(.{64})/g, '$1\n').trimEnd()}\n-----END CERTIFICATE-----\n`;
}

if (process.argv[1] && fs.realpathSync(process.argv[1]) === fs.realpathSync(new URL(import.meta.url).pathname)) {
  main().catch((err: unknown) => {
    process.stderr.write(`opcua test server failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
}
