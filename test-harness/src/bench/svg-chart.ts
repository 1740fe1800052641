/**
 * Horizontal grouped bar charts as plain SVG: a few dozen bars with labels need no chart library,
 * and the output is a static file that GitHub shows in Markdown (no script, no external font).
 */
export interface BarChart {
  readonly title: string;
  /** Under the chart: what was measured, how, where (or where the figures came from). */
  readonly caption: readonly string[];
  readonly unit: string;
  /** Log for figures that span decades (1 ms beside 100 ms); each bar still shows its value. */
  readonly scale: 'log' | 'linear';
  /** One colour per series; each bar row has one value per series. */
  readonly series: readonly string[];
  readonly sections: readonly ChartSection[];
}

export interface ChartSection {
  readonly label: string;
  readonly bars: readonly { readonly label: string; readonly values: readonly (number | undefined)[] }[];
}

const WIDTH = 900;
const LABEL_WIDTH = 290;
const PLOT_WIDTH = 500;
const BAR_HEIGHT = 12;
const ROW_GAP = 6;
const SECTION_GAP = 26;
const TOP = 70;
/** About what fits in WIDTH at the caption's 11 px. */
const CAPTION_CHARS = 140;
const COLOURS = ['#2b6cb0', '#dd6b20', '#38a169', '#805ad5', '#c53030'];
const FONT = 'font-family="Helvetica, Arial, sans-serif"';

/** The chart as an SVG document. */
export function renderBarChart(chart: BarChart): string {
  const values = chart.sections.flatMap((section) => section.bars.flatMap((bar) => bar.values)).filter(isPositive);
  const x = scaleOf(chart.scale, values);
  const body: string[] = [];
  let y = TOP;
  for (const section of chart.sections) {
    body.push(text(12, y + 12, section.label, 'font-weight="bold" font-size="13"'));
    y += 20;
    for (const bar of section.bars) {
      const height = chart.series.length * BAR_HEIGHT;
      body.push(text(LABEL_WIDTH - 8, y + height / 2 + 4, bar.label, 'font-size="12" text-anchor="end"'));
      bar.values.forEach((value, i) => {
        const top = y + i * BAR_HEIGHT;
        if (!isPositive(value)) {
          // A measured zero (no grant in a cell) has no place on a log axis but is a figure all the same.
          const said = value === 0 ? '0' : 'not measured';
          body.push(text(LABEL_WIDTH + 4, top + BAR_HEIGHT - 2, said, 'font-size="10" fill="#718096"'));
          return;
        }
        const length = Math.max(1, x.position(value));
        body.push(
          `<rect class="bar" x="${LABEL_WIDTH}" y="${top}" width="${length.toFixed(1)}" height="${BAR_HEIGHT - 2}" fill="${COLOURS[i % COLOURS.length]}"><title>${escapeXml(`${bar.label}, ${chart.series[i]}: ${figure(value)} ${chart.unit}`)}</title></rect>`,
          text(LABEL_WIDTH + length + 4, top + BAR_HEIGHT - 2, figure(value), 'font-size="10"'),
        );
      });
      y += height + ROW_GAP;
    }
    y += SECTION_GAP - ROW_GAP;
  }
  const axis = axisLines(x, TOP - 8, y, chart.unit);
  const captionTop = y + 34;
  const caption = chart.caption.flatMap(wrap).map((line, i) => text(12, captionTop + i * 15, line, 'font-size="11" fill="#4a5568"'));
  const height = captionTop + caption.length * 15 + 6;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" ${FONT}>`,
    // A title element names the picture for screen readers (and biome's a11y lint).
    `<title>${escapeXml(chart.title)}</title>`,
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    text(12, 24, chart.title, 'font-size="16" font-weight="bold"'),
    ...legend(chart.series),
    ...axis,
    ...body,
    ...caption,
    '</svg>',
    '',
  ].join('\n');
}

interface Scale {
  position(value: number): number;
  readonly ticks: readonly number[];
}

function scaleOf(kind: BarChart['scale'], values: readonly number[]): Scale {
  const max = Math.max(...values, Number.MIN_VALUE);
  if (kind === 'linear') {
    const step = niceStep(max / 5);
    const top = Math.ceil(max / step) * step;
    return { position: (value) => (value / top) * PLOT_WIDTH, ticks: Array.from({ length: top / step + 1 }, (_, i) => i * step) };
  }
  const low = 10 ** Math.floor(Math.log10(Math.min(...values, max)));
  const high = 10 ** Math.ceil(Math.log10(max) + 1e-9);
  const decades = Math.max(1, Math.round(Math.log10(high / low)));
  // Values below the first tick still get a sliver: the label beside it says how small.
  const position = (value: number): number => Math.max(0, (Math.log10(value / low) / decades) * PLOT_WIDTH);
  return { position, ticks: Array.from({ length: decades + 1 }, (_, i) => low * 10 ** i) };
}

function niceStep(raw: number): number {
  const power = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * power).find((step) => step >= raw) ?? 10 * power;
}

function axisLines(x: Scale, top: number, bottom: number, unit: string): string[] {
  return x.ticks.flatMap((tick) => {
    const at = (LABEL_WIDTH + x.position(tick)).toFixed(1);
    return [
      `<line x1="${at}" y1="${top}" x2="${at}" y2="${bottom}" stroke="#e2e8f0"/>`,
      text(
        Number(at),
        bottom + 14,
        `${figure(tick)}${tick === x.ticks.at(-1) ? ` ${unit}` : ''}`,
        'font-size="10" text-anchor="middle" fill="#4a5568"',
      ),
    ];
  });
}

function legend(series: readonly string[]): string[] {
  return series.flatMap((name, i) => {
    const left = LABEL_WIDTH + i * 150;
    return [
      `<rect x="${left}" y="38" width="12" height="10" fill="${COLOURS[i % COLOURS.length]}"/>`,
      text(left + 16, 47, name, 'font-size="11"'),
    ];
  });
}

/** Caption lines broken at spaces to fit the chart's width (SVG text does not wrap itself). */
function wrap(line: string): string[] {
  const lines: string[] = [];
  let current = '';
  for (const word of line.split(' ')) {
    if (current && current.length + 1 + word.length > CAPTION_CHARS) {
      lines.push(current);
      current = `  ${word}`;
    } else current = current ? `${current} ${word}` : word;
  }
  return [...lines, current];
}

function text(x: number, y: number, content: string, attributes: string): string {
  return `<text x="${x}" y="${y}" ${attributes}>${escapeXml(content)}</text>`;
}

/** A figure on a chart: three significant digits, thousands separated. */
export function figure(value: number): string {
  if (value >= 1000) return Math.round(value).toLocaleString('en-US');
  return Number(value.toPrecision(3)).toString();
}

export function escapeXml(content: string): string {
  return content.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function isPositive(value: number | undefined): value is number {
  return value !== undefined && Number.isFinite(value) && value > 0;
}
