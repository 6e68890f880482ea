/** A grouped bar panel for SVG charts, each bar a stack of parts (one part: a plain bar). No dependencies. */

export interface Bar {
  /** Under the bar (e.g. the worker count). */
  label: string;
  parts: { value: number; color: string }[];
}

export interface BarGroup {
  /** Under the group; `\n` breaks it into lines. */
  name: string;
  bars: Bar[];
}

export interface Panel {
  x: number;
  y: number;
  w: number;
  h: number;
  title: string;
  yLabel: string;
}

export const esc = (s: string) => s.replace(/[<>&]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;' })[c]!);

function niceMax(v: number): number {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  return Math.ceil(v / p) * p;
}

const height = (b: Bar) => b.parts.reduce((s, p) => s + (Number.isFinite(p.value) ? Math.max(0, p.value) : 0), 0);

/** One bar: its parts stacked from the bottom, the total above, its label below. */
function bar(b: Bar, x: number, bw: number, p: Panel, scale: (v: number) => number): string[] {
  const out: string[] = [];
  let top = p.y + p.h;
  for (const part of b.parts) {
    const bh = scale(Number.isFinite(part.value) ? Math.max(0, part.value) : 0);
    top -= bh;
    out.push(`<rect x="${x}" y="${top}" width="${bw}" height="${bh}" fill="${part.color}"/>`);
  }
  out.push(`<text x="${x + bw / 2}" y="${top - 4}" text-anchor="middle" font-size="10">${height(b).toFixed(1)}</text>`);
  out.push(`<text x="${x + bw / 2}" y="${p.y + p.h + 14}" text-anchor="middle" font-size="11">${esc(b.label)}</text>`);
  return out;
}

/** Bars in groups along the x axis, a legend under them. */
export function groupedBarPanel(p: Panel, groups: BarGroup[], legend: { name: string; color: string }[]): string {
  const yMax = niceMax(Math.max(0, ...groups.flatMap((g) => g.bars.map(height))) * 1.15);
  const scale = (v: number) => (v / yMax) * p.h;
  const out = [
    `<text x="${p.x}" y="${p.y - 12}" font-weight="bold">${esc(p.title)}</text>`,
    `<rect x="${p.x}" y="${p.y}" width="${p.w}" height="${p.h}" fill="none" stroke="#999"/>`,
  ];
  for (let i = 0; i <= 4; i++) {
    const v = (yMax * i) / 4;
    const y = p.y + p.h - scale(v);
    out.push(`<line x1="${p.x}" x2="${p.x + p.w}" y1="${y}" y2="${y}" stroke="#eee"/>`);
    out.push(`<text x="${p.x - 6}" y="${y + 4}" text-anchor="end" font-size="11">${+v.toPrecision(3)}</text>`);
  }
  const slots = groups.reduce((s, g) => s + g.bars.length + 1, 1);
  const bw = p.w / slots;
  let slot = 1;
  for (const g of groups) {
    const x0 = p.x + slot * bw;
    g.bars.forEach((b, i) => out.push(...bar(b, x0 + i * bw + bw * 0.1, bw * 0.8, p, scale)));
    g.name.split('\n').forEach((line, i) => {
      out.push(
        `<text x="${x0 + (g.bars.length * bw) / 2}" y="${p.y + p.h + 30 + i * 14}" text-anchor="middle" font-size="12">${esc(line)}</text>`,
      );
    });
    slot += g.bars.length + 1;
  }
  // The legend in one row under the group names.
  const ly = p.y + p.h + 30 + 14 * Math.max(1, ...groups.map((g) => g.name.split('\n').length));
  let lx = p.x;
  for (const l of legend) {
    out.push(`<rect x="${lx}" y="${ly}" width="10" height="10" fill="${l.color}"/>`);
    out.push(`<text x="${lx + 14}" y="${ly + 9}" font-size="11">${esc(l.name)}</text>`);
    lx += 24 + 6.5 * l.name.length;
  }
  const mid = p.y + p.h / 2;
  out.push(
    `<text x="${p.x - 44}" y="${mid}" text-anchor="middle" font-size="12" transform="rotate(-90 ${p.x - 44} ${mid})">${esc(p.yLabel)}</text>`,
  );
  return out.join('\n');
}
