export { CONTINUE_INSTRUCTION, continuationBody, continuationMode, runContinuation, type Continued, type ContinuationMode } from './continuation.js';
export { DEFAULT_MAX_CONTINUATIONS, MAX_CONTINUATIONS, MAX_OVERLAP, MIN_OVERLAP, recoverStream, seamOverlap, STREAM_IDLE_ERRORS, STREAM_RECOVERY, streamIdleError, type BreakReason, type RecoveryOptions, type StreamBreak, type StreamRecovery } from './recover.js';
export { doorSeamOf, type DoorSeam, type SeamAction, type SeamItem } from './seams.js';
