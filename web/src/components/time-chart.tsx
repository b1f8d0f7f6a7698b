/**
 * One value per UTC day and series, drawn with uPlot. uPlot sizes its elements through the CSSOM
 * (element.style), which the page's Content-Security-Policy (style-src 'self') allows.
 */
import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface ChartSeries {
  label: string;
  values: number[];
}

const PALETTE = [
  '#1d4ed8',
  '#c2410c',
  '#15803d',
  '#7e22ce',
  '#b91c1c',
  '#0e7490',
  '#a16207',
  '#be185d',
  '#4d7c0f',
  '#475569',
];

/** Tick steps for counts: whole numbers only (a scale of 0–2 requests read "2, 2, 1, 1, 0"). */
const WHOLE_STEPS = Array.from({ length: 16 }, (_, i) => [1, 2, 5].map((m) => m * 10 ** i)).flat();

/**
 * The y range: uPlot's own (padded, snapped), except for days with nothing at all — uPlot then spans
 * 0 to 100, and an empty Spend chart read "$100.00" at its top. Nothing is drawn up to one unit.
 */
function yRange(_u: uPlot, min: number | null, max: number | null): uPlot.Range.MinMax {
  if (min === null || max === null) return [0, 1];
  if (min === 0 && max === 0) return [0, 1];
  return uPlot.rangeNum(min, max, 0.1, true);
}

/** The y axis's width from its longest tick label (a fixed width clipped "$0.00015"). */
function axisWidth(_u: uPlot, values: string[] | null): number {
  const longest = Math.max(0, ...(values ?? []).map((v) => v.length));
  return Math.max(50, Math.ceil(longest * 7.5) + 24);
}

export function TimeChart(props: {
  title: string;
  days: string[];
  series: ChartSeries[];
  format(value: number): string;
  /** The values are counts: ticks at whole numbers only. */
  whole?: boolean;
}) {
  const container = useRef<HTMLDivElement>(null);
  const { days, series, format, whole } = props;

  useEffect(() => {
    const element = container.current;
    if (!element) return;
    const xs = days.map((day) => Date.parse(`${day}T00:00:00Z`) / 1000);
    const options: uPlot.Options = {
      width: Math.max(element.clientWidth, 280),
      height: 220,
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      scales: { x: { time: true }, y: { range: yRange } },
      axes: [
        {},
        { values: (_u, ticks) => ticks.map(format), size: axisWidth, ...(whole ? { incrs: WHOLE_STEPS } : {}) },
      ],
      legend: { live: false },
      series: [
        { label: 'UTC day' },
        ...series.map((s, i) => ({
          label: s.label,
          stroke: PALETTE[i % PALETTE.length] ?? '#1d4ed8',
          width: 2,
          points: { show: true, size: 5 },
          value: (_u: uPlot, v: number | null) => (v === null ? '—' : format(v)),
        })),
      ],
    };
    const plot = new uPlot(options, [xs, ...series.map((s) => s.values)], element);
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(element.clientWidth, 280), height: 220 }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [days, series, format, whole]);

  return (
    <figure className="chart">
      <figcaption>{props.title}</figcaption>
      <div
        ref={container}
        className="chart-canvas"
        role="img"
        aria-label={`${props.title}, per UTC day for the last ${days.length} days (the values follow as a table)`}
      />
      {/* The drawing's values for those who cannot see it (WCAG 1.1.1): a table, read, not shown —
          inside a hidden box, since a table takes no width of 1 px (alone it widened the page). */}
      <div className="visually-hidden">
        <table>
          <caption>{props.title}, per UTC day</caption>
          <thead>
            <tr>
              <th scope="col">UTC day</th>
              {/* By position: two series may carry one label (two keys of one name). */}
              {series.map((s, column) => (
                <th scope="col" key={column}>
                  {s.label}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {days.map((day, i) => (
              <tr key={day}>
                <th scope="row">{day}</th>
                {series.map((s, column) => (
                  <td key={column}>{format(s.values[i] ?? 0)}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </figure>
  );
}
