/** The second {@link isoTime} formatted last (epoch s), and its text up to the seconds' end (`2026-12-08T00:02:10.`). */
let isoSecond = NaN;
let isoPrefix = '';

/**
 * `new Date(ms).toISOString()` (`"2026-12-08T00:02:10.249Z"`), with the date and time up to the second formatted
 * once a second rather than per call: what is stamped per log line or per priced request mostly falls within a
 * second of the one before. A fraction of a millisecond is dropped, as a Date drops it; outside the years 1970–9999
 * (and for NaN) it is Date's own text, or its RangeError.
 */
export function isoTime(ms: number): string {
  if (!(ms >= 0 && ms <= 253_402_300_799_999)) return new Date(ms).toISOString();
  const whole = Math.floor(ms);
  const second = Math.floor(whole / 1000);
  const milli = whole - second * 1000;
  if (second !== isoSecond) {
    isoSecond = second;
    isoPrefix = new Date(second * 1000).toISOString().slice(0, 20);
  }
  return `${isoPrefix}${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z`;
}
