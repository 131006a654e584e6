import type { Caller, StoreKind, World } from './world.js';

/**
 * One way to try a plugin's state across workspaces, for the tenant-isolation matrix: workspace A
 * does something that leaves state behind, then B, whose names collide with A's (the same slugs,
 * models, users, metadata values, request bodies), looks. What B sees must equal what B sees in a
 * world where A did nothing; and what A then sees must differ from it (the probe reached real state,
 * so the comparison can fail).
 */
export interface Probe {
  /** What it tries, for the test's name. */
  title: string;
  /** The state declarations it exercises, `plugin:state` (`GatewayPlugin.state`). */
  covers: readonly string[];
  /** The stores it runs on; default both (state kept in memory, and in Redis). */
  stores?: readonly StoreKind[];
  /** A's traffic; returns what B's observation may need of it (an id A got, a value A stored). */
  dirty(world: World, a: Caller): Promise<Clue>;
  /** What `who` sees, as plain data that must not carry anything of one world (ids, times). */
  observe(world: World, who: Caller, clue: Clue): Promise<unknown>;
}

/** What A's traffic left for the observation to look for. */
export type Clue = Record<string, string>;
