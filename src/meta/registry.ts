// The one list of metadata entities. Tables, URL names and aliases, real
// columns and foreign keys are declared here; the SQL schema, the generic and
// nested routes, `_tables`, `_schema` and `dyn/_schema` are all derived from it.

/**
 * How a real column is stored and shown on the wire:
 * - `fk`: integer id of a row in `parent`; a string on the wire.
 * - `text`, `integer`, `boolean`, `json`: plain values (`json` stored as text).
 * - `secret`: stored, never returned (password hashes).
 */
export type ColumnKind = 'fk' | 'text' | 'integer' | 'boolean' | 'json' | 'secret';

export interface ColumnDef {
  name: string;
  kind: ColumnKind;
  /** Parent table, for `fk` columns. */
  parent?: string;
  unique?: boolean;
}

export interface EntityDef {
  /** SQL table name. */
  table: string;
  /** URL segments: the first is canonical, the rest are aliases of the same table. */
  urlNames: string[];
  /** Real columns besides `id` and `meta_data`. */
  columns: ColumnDef[];
  /** `configurations` has a text primary key. */
  textId?: boolean;
}

const fk = (name: string, parent: string): ColumnDef => ({ name, kind: 'fk', parent });
const unitScoped = (table: string, url = table): EntityDef => ({ table, urlNames: [url], columns: [fk('unitsId', 'units')] });

export const ENTITIES: readonly EntityDef[] = [
  { table: 'orgs', urlNames: ['orgs', 'customers'], columns: [] },
  { table: 'sites', urlNames: ['sites'], columns: [fk('orgsId', 'orgs')] },
  { table: 'units', urlNames: ['units'], columns: [fk('siteId', 'sites')] },
  { table: 'equipment', urlNames: ['equipment'], columns: [fk('unitsId', 'units')] },
  {
    table: 'tagmeta',
    urlNames: ['tagmeta'],
    columns: [fk('unitsId', 'units'), fk('equipmentId', 'equipment'), { name: 'dataTagId', kind: 'text' }],
  },
  unitScoped('tags'),
  unitScoped('statuses'),
  unitScoped('deviations'),
  unitScoped('faulttemplates', 'faultTemplates'),
  unitScoped('configs'),
  unitScoped('faulttrees'),
  unitScoped('incidents'),
  unitScoped('calculations'),
  unitScoped('heatrates'),
  unitScoped('activities'),
  unitScoped('modelpipelines'),
  unitScoped('boilerassets'),
  unitScoped('dashboards'),
  { table: 'dashboardplots', urlNames: ['dashboard-plots'], columns: [fk('dashboardsId', 'dashboards')] },
  { table: 'clients', urlNames: ['clients'], columns: [fk('orgsId', 'orgs')] },
  { table: 'ingestconfigs', urlNames: ['ingestconfigs'], columns: [fk('clientsId', 'clients'), fk('unitsId', 'units')] },
  {
    table: 'users',
    urlNames: ['users', 'Users'],
    columns: [
      { name: 'email', kind: 'text', unique: true },
      { name: 'password', kind: 'secret' },
      { name: 'username', kind: 'text' },
    ],
  },
  { table: 'userprofiles', urlNames: ['userprofiles'], columns: [fk('usersId', 'users')] },
  { table: 'useractivities', urlNames: ['useractivities'], columns: [fk('usersId', 'users')] },
  {
    table: 'notifications',
    urlNames: ['notifications'],
    columns: [
      fk('orgsId', 'orgs'), fk('sitesId', 'sites'), fk('unitsId', 'units'),
      { name: 'userId', kind: 'text' },
      { name: 'severity', kind: 'text' },
      { name: 'source', kind: 'text' },
      { name: 'title', kind: 'text' },
      { name: 'body', kind: 'text' },
      { name: 'link', kind: 'text' },
      { name: 'redirect', kind: 'boolean' },
      { name: 'payload', kind: 'json' },
      { name: 'sourceRef', kind: 'text' },
      { name: 'expiresAt', kind: 'integer' },
      { name: 'createdAt', kind: 'integer' },
      { name: 'readAt', kind: 'integer' },
      { name: 'deliveredAt', kind: 'integer' },
    ],
  },
  { table: 'configurations', urlNames: ['configurations'], columns: [], textId: true },
  { table: 'labels', urlNames: ['labels'], columns: [] },
  { table: 'profiles_lookups', urlNames: ['profiles-lookups'], columns: [] },
  // Also a generic CRUD model in the contract's pattern list.
  { table: 'connections', urlNames: ['connections'], columns: [] },
];

/** A foreign-key edge of the entity graph. */
export interface Relation {
  child: EntityDef;
  parent: EntityDef;
  column: string;
}

export class Registry {
  readonly entities: readonly EntityDef[];
  private readonly byTable = new Map<string, EntityDef>();
  private readonly byUrl = new Map<string, EntityDef>();
  readonly relations: readonly Relation[];

  constructor(entities: readonly EntityDef[] = ENTITIES) {
    this.entities = entities;
    for (const def of entities) {
      this.byTable.set(def.table, def);
      for (const url of def.urlNames) this.byUrl.set(url, def);
    }
    this.relations = entities.flatMap((child) =>
      child.columns.filter((c) => c.kind === 'fk').map((c) => ({ child, parent: this.table(c.parent!), column: c.name })),
    );
  }

  table(name: string): EntityDef {
    const def = this.byTable.get(name);
    if (!def) throw new Error(`unknown entity table ${name}`);
    return def;
  }

  /** By URL name or alias (also accepts the table name). */
  find(urlOrTable: string): EntityDef | undefined {
    return this.byUrl.get(urlOrTable) ?? this.byTable.get(urlOrTable);
  }

  childrenOf(parent: EntityDef): Relation[] {
    return this.relations.filter((r) => r.parent === parent);
  }

  parentsOf(child: EntityDef): Relation[] {
    return this.relations.filter((r) => r.child === child);
  }

  /** Names by which `include` may name a relation of `def`, mapped to the relation and its direction. */
  relationNames(def: EntityDef): Map<string, { relation: Relation; direction: 'children' | 'parent' }> {
    const names = new Map<string, { relation: Relation; direction: 'children' | 'parent' }>();
    for (const relation of this.childrenOf(def)) {
      for (const name of [relation.child.table, ...relation.child.urlNames]) names.set(name, { relation, direction: 'children' });
    }
    for (const relation of this.parentsOf(def)) {
      const short = relation.column.replace(/Id$/, '');
      for (const name of [short, relation.parent.table, ...relation.parent.urlNames]) {
        if (!names.has(name)) names.set(name, { relation, direction: 'parent' });
      }
    }
    return names;
  }

  realColumns(def: EntityDef): Set<string> {
    return new Set(['id', ...def.columns.map((c) => c.name)]);
  }
}
