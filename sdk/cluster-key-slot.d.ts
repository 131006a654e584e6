// The package ships no types: its one function, as ioredis uses it.
declare module 'cluster-key-slot' {
  /** The Redis Cluster hash slot (0–16383) of a key, its hash tag honoured. */
  function calculateSlot(key: string | Buffer): number;
  export default calculateSlot;
}
