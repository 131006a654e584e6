export { doorStreamOf, serializeEvent, type DoorStream } from './doors.js';
export { STREAM_CUT, StreamControl, streamControl, type StreamCut, type StreamView, type StreamWatcher } from './control.js';
