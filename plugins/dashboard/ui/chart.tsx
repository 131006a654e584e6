import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { useEffect, useRef, useState } from 'preact/hooks';

/** Fired on window when the theme changes: canvas charts read their colours when drawn, so they are drawn again. */
export const THEME_EVENT = 'gateway-theme';

/** A counter that moves when the page's theme (the toggle, or the system's setting) changes. */
function useThemeVersion(): number {
  const [version, setVersion] = useState(0);
  useEffect(() => {
    const bump = () => setVersion((x) => x + 1);
    const media = matchMedia('(prefers-color-scheme: dark)');
    addEventListener(THEME_EVENT, bump);
    media.addEventListener('change', bump);
    return () => {
      removeEventListener(THEME_EVENT, bump);
      media.removeEventListener('change', bump);
    };
  }, []);
  return version;
}

export interface Series {
  label: string;
  values: (number | null)[];
  /** A CSS custom property name holding the colour, so light and dark themes each get theirs. */
  colorVar: string;
}

const cssColor = (name: string): string => getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';

/**
 * A line chart over time (uPlot: canvas, about 50 KB, no dependencies), sized
 * to its container and redrawn when the container or the data changes.
 */
export function Chart({ title, times, series, format }: { title: string; times: number[]; series: Series[]; format: (v: number) => string }) {
  const box = useRef<HTMLDivElement>(null);
  const theme = useThemeVersion();
  useEffect(() => {
    const el = box.current;
    if (el === null) return;
    const axis = cssColor('--muted');
    const grid = cssColor('--grid');
    const opts: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height: 180,
      legend: { show: true },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true } },
      axes: [
        { stroke: axis, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid } },
        { stroke: axis, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, size: (_u, values) => 24 + 7 * Math.max(4, ...(values ?? []).map((v) => String(v).length)), values: (_u, ticks) => ticks.map((t) => format(t)) },
      ],
      // A series with few values (latency in a mostly idle range) shows its points: a lone value draws no line.
      series: [
        {},
        ...series.map((s) => ({
          label: s.label,
          stroke: cssColor(s.colorVar),
          width: 2,
          points: { show: s.values.filter((x) => x !== null).length < 30, size: 5 },
          value: (_u: uPlot, v: number | null) => (v === null ? '—' : format(v)),
        })),
      ],
    };
    const plot = new uPlot(opts, [times, ...series.map((s) => s.values)] as uPlot.AlignedData, el);
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(200, el.clientWidth), height: 180 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [times, series, format, theme]);
  return (
    <figure class="chart" aria-label={title}>
      <figcaption>{title}</figcaption>
      <div ref={box} />
    </figure>
  );
}
