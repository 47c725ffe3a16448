// The System page: health per subsystem, ingest and write buffer figures, the cluster's state,
// and for admins the process log and backups. Each section is its own panel that loads and
// fails on its own; the whole page reloads every 5 s (one load at a time) while it is shown.
// Admin-only routes are not even asked for by other users: the panel says an admin is needed.

import type { AppContext, View } from '../app.js';
import { ApiError } from '../api.js';
import { h } from '../dom.js';
import { bytes, dateTime, duration } from '../format.js';
import { cell, count, dataTable, kvTable, Panel, when } from '../status/parts.js';
import { repeat } from '../status/repeat.js';

const REFRESH_MS = 5_000;
const LATEST_BACKUPS = 5;

interface SubsystemHealth { status: 'ok' | 'degraded' | 'failed'; reason?: string; acceptsWrites?: boolean; configured?: Record<string, boolean> }
interface Health { status: 'ok' | 'degraded'; acceptsWrites: boolean; subsystems: Record<string, SubsystemHealth> }
interface IngestCounters { clientId: string; tagGroup: string; requests: number; points: number; rejectedLines: number; skippedStringFields: number; rejectedRequests: number; rateLimited: number; lastSeen: number | null }
interface Shard { shard: number; capacityPoints: number; pendingPoints: number; fill: number; flushes: number; lastFlushMs: number | null; ringBytes: number; ringUsedBytes: number; sealedDays: number; activeBytes: number; sealedBytes: number }
interface ClusterStatus { node_id: string; role: string; leader: string | null; epoch: number; peers: Array<{ node_id: string; url: string; lag_ms: number | null; queued_bytes: number }> }
interface Job { id: string; kind: string; status: 'running' | 'done' | 'failed'; started_ms: number; finished_ms: number | null; progress: number; message: string; error: string | null }
interface BackupResult { ok: boolean; file_name: string | null; error: string | null; at_ms: number; duration_ms: number }
interface BackupStatus { running: boolean; last_backup_ms: number | null; next_backup_ms: number | null; last_sqlite: BackupResult | null; last_timeseries: BackupResult | null }
interface BackupFile { file_name: string; kind: 'sqlite' | 'timeseries'; size_bytes: number; created_ms: number }

const stateClass = (s: string) => (s === 'ok' || s === 'done' ? 'state-ok' : s === 'failed' ? 'state-failed' : s === 'running' ? 'state-running' : 'state-degraded');
const state = (s: string) => h('span', { class: stateClass(s) }, s);
const percent = (f: number) => `${Math.round(f * 1000) / 10} %`;

function drawHealth(health: Health) {
  const rows = Object.entries(health.subsystems).map(([name, s]) => {
    const notes: string[] = [];
    if (s.reason) notes.push(s.reason);
    if (s.acceptsWrites === false) notes.push('does not accept writes');
    const on = Object.entries(s.configured ?? {});
    if (on.length) notes.push(on.map(([k, v]) => `${k}: ${v ? 'configured' : 'not configured'}`).join(', '));
    return [cell(name, { class: 'subsystem' }), state(s.status), cell(notes.join('; ') || '—')];
  });
  return [
    h('p', { class: 'overall' }, 'Overall ', state(health.status), health.acceptsWrites ? ' · writes accepted' : h('strong', { class: 'state-failed' }, ' · writes are refused')),
    dataTable('Health per subsystem', [{ label: 'Subsystem' }, { label: 'Status' }, { label: 'Reason', class: 'wrap' }], rows, { rowAttrs: (i) => ({ 'data-subsystem': Object.keys(health.subsystems)[i]! }) }),
  ];
}

function drawIngest(stats: { since: number; clients: IngestCounters[] }) {
  const sum = (k: keyof IngestCounters) => stats.clients.reduce((n, c) => n + (c[k] as number), 0);
  const parts: Array<Node> = [kvTable('Ingest totals', [
    ['Counting since', when(stats.since)],
    ['Clients and tag groups', count(stats.clients.length)],
    ['Requests', count(sum('requests'))],
    ['Points', count(sum('points'))],
    ['Rejected requests', count(sum('rejectedRequests'))],
    ['Rejected lines', count(sum('rejectedLines'))],
    ['Rate limited', count(sum('rateLimited'))],
  ])];
  if (stats.clients.length) {
    parts.push(h('h3', {}, 'Per client and tag group'), dataTable('Ingest per client and tag group', [
      { label: 'Client' }, { label: 'Tag group' }, { label: 'Requests', class: 'num' }, { label: 'Points', class: 'num' }, { label: 'Rejected lines', class: 'num' },
      { label: 'String fields skipped', class: 'num' }, { label: 'Rejected requests', class: 'num' }, { label: 'Rate limited', class: 'num' }, { label: 'Last seen' },
    ], stats.clients.map((c) => [c.clientId, c.tagGroup, count(c.requests), count(c.points), count(c.rejectedLines), count(c.skippedStringFields), count(c.rejectedRequests), count(c.rateLimited), cell(when(c.lastSeen))])));
  }
  return parts;
}

function drawBuffers(stats: { shards: Shard[]; pendingPoints: number; flushIntervalMs: number }) {
  return [
    kvTable('Write buffer totals', [['Points waiting for a flush', count(stats.pendingPoints)], ['Flush interval', duration(stats.flushIntervalMs)], ['Shards', count(stats.shards.length)]]),
    h('h3', {}, 'Per shard'),
    dataTable('Write buffer per shard', [
      { label: 'Shard', class: 'num' }, { label: 'Pending points', class: 'num' }, { label: 'Fill', class: 'num' }, { label: 'Flushes', class: 'num' }, { label: 'Last flush' },
      { label: 'Request ring', class: 'num' }, { label: 'Active data', class: 'num' }, { label: 'Sealed data', class: 'num' }, { label: 'Sealed days', class: 'num' },
    ], stats.shards.map((s) => [
      s.shard, cell(count(s.pendingPoints), { title: `of ${count(s.capacityPoints)}` }), percent(s.fill), count(s.flushes), cell(when(s.lastFlushMs)),
      `${bytes(s.ringUsedBytes)} of ${bytes(s.ringBytes)}`, bytes(s.activeBytes), bytes(s.sealedBytes), count(s.sealedDays),
    ])),
  ];
}

/** With clustering off the service still answers, as the one leader of epoch 0 with no peers. */
const clustered = (c: ClusterStatus) => !(c.node_id === 'single' || (c.epoch === 0 && c.peers.length === 0 && !c.leader));
const SINGLE = () => [h('p', { class: 'single-node' }, 'Single node (clustering off)')];

function drawCluster(c: ClusterStatus) {
  if (!clustered(c)) return SINGLE();
  const parts: Node[] = [kvTable('This node', [['Node', c.node_id], ['Role', h('strong', {}, c.role)], ['Leader', c.leader ?? 'none known'], ['Epoch', String(c.epoch)]])];
  if (c.role === 'leader') {
    parts.push(c.peers.length === 0 ? h('p', { class: 'empty' }, 'No peers.') : dataTable('Peers', [
      { label: 'Peer' }, { label: 'Address' }, { label: 'Lag', class: 'num' }, { label: 'Queued', class: 'num' },
    ], c.peers.map((p) => [p.node_id, p.url, p.lag_ms === null ? 'unknown' : duration(p.lag_ms), bytes(p.queued_bytes)])));
  }
  return parts;
}

function drawJobs(jobs: Job[]) {
  if (jobs.length === 0) return [h('p', { class: 'empty' }, 'No jobs yet.')];
  return [dataTable('Jobs, running first', [
    { label: 'Kind' }, { label: 'Status' }, { label: 'Progress' }, { label: 'Started' }, { label: 'Took' }, { label: 'Message', class: 'wrap' },
  ], jobs.map((j) => [
    j.kind, state(j.status),
    cell([h('progress', { max: 1, value: j.progress, 'aria-label': `${j.kind} job progress` }), h('span', { class: 'sub' }, percent(j.progress))], { class: 'progress' }),
    cell(when(j.started_ms)),
    j.finished_ms === null ? 'running' : duration(j.finished_ms - j.started_ms),
    cell([j.message, j.error ? h('span', { class: 'sub error' }, j.error) : null]),
  ]), { rowAttrs: (i) => ({ 'data-job': jobs[i]!.id, 'data-kind': jobs[i]!.kind, 'data-status': jobs[i]!.status }) })];
}

function backupResult(r: BackupResult | null) {
  if (!r) return 'none yet';
  return [state(r.ok ? 'ok' : 'failed'), ` ${dateTime(r.at_ms)} (${duration(r.duration_ms)})`, r.file_name ? h('span', { class: 'sub' }, r.file_name) : null, r.error ? h('span', { class: 'sub error' }, r.error) : null];
}

function drawBackup(status: BackupStatus, list: { sqlite_backups: BackupFile[]; timeseries_backups: BackupFile[] }) {
  const latest = [...list.sqlite_backups, ...list.timeseries_backups].sort((a, b) => b.created_ms - a.created_ms).slice(0, LATEST_BACKUPS);
  return [
    kvTable('Backup status', [
      ['Running now', status.running ? h('strong', { class: 'state-running' }, 'yes') : 'no'],
      ['Last backup', when(status.last_backup_ms)],
      ['Next backup', status.next_backup_ms === null ? 'automatic backups are off' : dateTime(status.next_backup_ms)],
      ['Last SQLite backup', backupResult(status.last_sqlite)],
      ['Last time-series backup', backupResult(status.last_timeseries)],
    ]),
    h('h3', {}, 'Latest backups'),
    latest.length === 0 ? h('p', { class: 'empty' }, 'No backups in the backup directory.') : dataTable('Latest backups', [
      { label: 'File' }, { label: 'Size', class: 'num' }, { label: 'Created' },
    ], latest.map((f) => [cell(f.file_name, { title: f.kind }), bytes(f.size_bytes), cell(when(f.created_ms))])),
  ];
}

export function openSystem(ctx: AppContext, _params: URLSearchParams): View {
  const health = new Panel('system-health', 'Health');
  const ingest = new Panel('system-ingest', 'Ingest');
  const buffers = new Panel('system-buffers', 'Write buffers');
  const cluster = new Panel('system-cluster', 'Cluster');
  const jobs = new Panel('system-jobs', 'Process log');
  const backup = new Panel('system-backup', 'Backup');
  const updated = h('span', { class: 'muted updated' });

  /** One section: its data, drawn when it changed; a failure shows in that panel only. */
  const section = async <T>(panel: Panel, what: string, load: () => Promise<T>, draw: (data: T) => Node[]) => {
    try {
      const data = await load();
      panel.show(JSON.stringify(data), () => draw(data));
    } catch (err) {
      panel.fail(err, `Could not load ${what}`);
    }
  };
  const adminOnly = (panel: Panel, what: string) => panel.show('admin', () => [h('p', { class: 'needs-admin' }, `${what} needs an admin account.`)]);

  // /svcapi/health answers 503 with the same body while writes are refused: that is news to show, not an error.
  const loadHealth = async (signal: AbortSignal): Promise<Health> => {
    const response = await fetch('/svcapi/health', { headers: { authorization: `Bearer ${ctx.session.token}` }, signal });
    if (response.status !== 200 && response.status !== 503) throw new ApiError(response.status, `${response.status} ${response.statusText}`);
    return response.json() as Promise<Health>;
  };
  const loadCluster = async (signal: AbortSignal): Promise<ClusterStatus | null> => {
    try {
      return await ctx.api.get<ClusterStatus>('/svcapi/cluster/status', undefined, signal);
    } catch (err) {
      if (err instanceof ApiError && (err.status === 501 || err.status === 404)) return null;
      throw err;
    }
  };
  const loadJobs = async (signal: AbortSignal): Promise<Job[]> => {
    // Running jobs first, even one older than the latest 20.
    const [running, latest] = await Promise.all([
      ctx.api.get<{ jobs: Job[] }>('/svcapi/process-log', { status: 'running', limit: 100 }, signal),
      ctx.api.get<{ jobs: Job[] }>('/svcapi/process-log', { limit: 20 }, signal),
    ]);
    const byStart = (a: Job, b: Job) => b.started_ms - a.started_ms;
    const runningIds = new Set(running.jobs.map((j) => j.id));
    return [...running.jobs.sort(byStart), ...latest.jobs.filter((j) => !runningIds.has(j.id) && j.status !== 'running').sort(byStart)];
  };

  const poll = repeat(async (signal) => {
    await Promise.all([
      section(health, 'the health', () => loadHealth(signal), drawHealth),
      section(ingest, 'the ingest statistics', () => ctx.api.get<{ since: number; clients: IngestCounters[] }>('/svcapi/ingest/stats', undefined, signal), drawIngest),
      section(buffers, 'the write buffer statistics', () => ctx.api.get<{ shards: Shard[]; pendingPoints: number; flushIntervalMs: number }>('/svcapi/write_buffer_stats', undefined, signal), drawBuffers),
      section(cluster, 'the cluster status', () => loadCluster(signal), (c) => (c ? drawCluster(c) : SINGLE())),
      ctx.isAdmin ? section(jobs, 'the process log', () => loadJobs(signal), drawJobs) : adminOnly(jobs, 'The process log'),
      ctx.isAdmin
        ? section(backup, 'the backup status', () => Promise.all([
          ctx.api.get<BackupStatus>('/api/admin/backup/status', undefined, signal),
          ctx.api.get<{ sqlite_backups: BackupFile[]; timeseries_backups: BackupFile[] }>('/api/admin/backup/list', undefined, signal),
        ]), ([s, l]) => drawBackup(s, l))
        : adminOnly(backup, 'Backup status'),
    ]);
    if (!signal.aborted) updated.textContent = `Updated ${dateTime(Date.now()).slice(11)}`;
  }, REFRESH_MS);

  const root = h('section', { class: 'status-page system' },
    h('div', { class: 'page-head' }, h('h1', {}, 'System'), updated),
    // Health beside the short sections; the wide tables get the whole width.
    h('div', { class: 'panels' }, health.root, h('div', { class: 'side' }, cluster.root, backup.root), jobs.root, ingest.root, buffers.root));
  for (const wide of [jobs, ingest, buffers]) wide.root.classList.add('wide');
  return { root, dispose: () => poll.stop() };
}
