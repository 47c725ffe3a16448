// Browse roots: every numeric variable below a node, found by walking the hierarchical references
// (Organizes, HasComponent, …) breadth first, many nodes per Browse call. Properties (HasProperty:
// EURange, EngineeringUnits, …) are metadata, not process values, so they are not followed.
// Bounded in depth and in nodes visited, and safe from reference cycles (Organizes may loop).

import type { ClientSession, ReferenceDescription } from 'node-opcua-client';
import type { OpcuaLib } from './library.js';

export interface BrowsedVariable {
  nodeId: string;
  /** Browse names below the root, joined by "/". */
  path: string;
}

export interface BrowseBounds {
  maxDepth: number;
  maxNodes: number;
}

const NODES_PER_CALL = 200;
const READS_PER_CALL = 1000;
/** Built-in numeric DataTypes (ns=0): Boolean…Double, Number/Integer/UInteger, Counter, Duration. */
const NUMERIC_TYPES = new Set([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 26, 27, 28, 289, 290]);
const HAS_PROPERTY = 46;
const HIERARCHICAL_REFERENCES = 33;

/** Variables below `root` (not the root itself), each with its path; `truncated` when a bound was hit. */
export async function browseVariables(
  lib: OpcuaLib,
  session: ClientSession,
  root: string,
  bounds: BrowseBounds,
): Promise<{ variables: BrowsedVariable[]; truncated: boolean }> {
  const { BrowseDirection, NodeClassMask, resolveNodeId } = lib;
  const rootId = resolveNodeId(root);
  const seen = new Set<string>([rootId.toString()]);
  const variables: BrowsedVariable[] = [];
  let level: Array<{ nodeId: string; path: string }> = [{ nodeId: rootId.toString(), path: '' }];
  let truncated = false;
  for (let depth = 0; level.length > 0; depth++) {
    if (depth >= bounds.maxDepth) {
      truncated = true;
      break;
    }
    const next: typeof level = [];
    for (let i = 0; i < level.length; i += NODES_PER_CALL) {
      const parents = level.slice(i, i + NODES_PER_CALL);
      const results = await session.browse(parents.map((p) => ({
        nodeId: p.nodeId,
        browseDirection: BrowseDirection.Forward,
        referenceTypeId: lib.makeNodeId(HIERARCHICAL_REFERENCES),
        includeSubtypes: true,
        nodeClassMask: NodeClassMask.Object | NodeClassMask.Variable,
        resultMask: 0x3f,
      })));
      for (let r = 0; r < results.length; r++) {
        const references = await allReferences(session, results[r]!);
        for (const ref of references) {
          if (ref.referenceTypeId.namespace === 0 && ref.referenceTypeId.value === HAS_PROPERTY) continue;
          const id = ref.nodeId.toString();
          if (seen.has(id)) continue;
          if (seen.size >= bounds.maxNodes) {
            truncated = true;
            continue;
          }
          seen.add(id);
          const parentPath = parents[r]!.path;
          const path = parentPath === '' ? ref.browseName.name ?? '' : `${parentPath}/${ref.browseName.name ?? ''}`;
          // A variable can have component variables (a structure's fields): keep walking below it too.
          if (ref.nodeClass === lib.NodeClass.Variable) variables.push({ nodeId: id, path });
          next.push({ nodeId: id, path });
        }
      }
    }
    level = next;
  }
  return { variables: await numericOnly(lib, session, variables), truncated };
}

/** The references of one Browse result and of every BrowseNext its continuation point needs. */
async function allReferences(session: ClientSession, first: { statusCode: { isGood(): boolean }; references: ReferenceDescription[] | null; continuationPoint: Buffer | null }): Promise<ReferenceDescription[]> {
  if (!first.statusCode.isGood()) return [];
  const out = [...(first.references ?? [])];
  let cp = first.continuationPoint;
  for (let rounds = 0; cp && cp.length > 0 && rounds < 10_000; rounds++) {
    const [next] = await session.browseNext([cp], false);
    if (!next || !next.statusCode.isGood()) break;
    out.push(...(next.references ?? []));
    cp = next.continuationPoint;
  }
  return out;
}

/** The variables whose DataType is numeric and whose value is a scalar (or may be). */
async function numericOnly(lib: OpcuaLib, session: ClientSession, variables: BrowsedVariable[]): Promise<BrowsedVariable[]> {
  const out: BrowsedVariable[] = [];
  for (let i = 0; i < variables.length; i += READS_PER_CALL) {
    const chunk = variables.slice(i, i + READS_PER_CALL);
    const read = await session.read(chunk.flatMap((v) => [
      { nodeId: v.nodeId, attributeId: lib.AttributeIds.DataType },
      { nodeId: v.nodeId, attributeId: lib.AttributeIds.ValueRank },
    ]));
    chunk.forEach((v, j) => {
      const dataType = read[2 * j]!;
      const valueRank = read[2 * j + 1]!;
      if (!dataType.statusCode.isGood()) return;
      const typeId = dataType.value.value as { namespace: number; value: unknown } | null;
      if (!typeId || typeId.namespace !== 0 || typeof typeId.value !== 'number' || !NUMERIC_TYPES.has(typeId.value)) return;
      // -1 scalar, -2 any, -3 scalar or one dimension: a value may be a scalar; arrays are skipped when they come.
      const rank = valueRank.statusCode.isGood() ? Number(valueRank.value.value) : -1;
      if (rank > 0 || rank === 0) return;
      out.push(v);
    });
  }
  return out;
}
