/** A small SVG chart: memory against agents per design, and throughput per design. No dependencies. */

export interface Series {
  name: string;
  color: string;
  points: { x: number; y: number }[];
}

const esc = (s: string) => s.replace(/[<>&]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;' })[c]!);

function niceMax(v: number): number {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  return Math.ceil(v / p) * p;
}

export function linePanel(
  x0: number,
  y0: number,
  w: number,
  h: number,
  title: string,
  xLabel: string,
  yLabel: string,
  series: Series[],
): string {
  const all = series.flatMap((s) => s.points);
  const xMax = niceMax(Math.max(1, ...all.map((p) => p.x)));
  const yMax = niceMax(Math.max(1, ...all.map((p) => p.y)));
  const sx = (x: number) => x0 + (x / xMax) * w;
  const sy = (y: number) => y0 + h - (y / yMax) * h;
  const out: string[] = [
    `<text x="${x0}" y="${y0 - 12}" font-weight="bold">${esc(title)}</text>`,
    `<rect x="${x0}" y="${y0}" width="${w}" height="${h}" fill="none" stroke="#999"/>`,
  ];
  for (let i = 0; i <= 4; i++) {
    const yv = (yMax * i) / 4;
    const xv = (xMax * i) / 4;
    out.push(`<line x1="${x0}" x2="${x0 + w}" y1="${sy(yv)}" y2="${sy(yv)}" stroke="#eee"/>`);
    out.push(`<text x="${x0 - 6}" y="${sy(yv) + 4}" text-anchor="end" font-size="11">${+yv.toPrecision(3)}</text>`);
    out.push(`<text x="${sx(xv)}" y="${y0 + h + 16}" text-anchor="middle" font-size="11">${+xv.toPrecision(3)}</text>`);
  }
  out.push(`<text x="${x0 + w / 2}" y="${y0 + h + 34}" text-anchor="middle" font-size="12">${esc(xLabel)}</text>`);
  out.push(
    `<text x="${x0 - 48}" y="${y0 + h / 2}" text-anchor="middle" font-size="12" transform="rotate(-90 ${x0 - 48} ${y0 + h / 2})">${esc(yLabel)}</text>`,
  );
  series.forEach((s, i) => {
    const pts = [...s.points].sort((a, b) => a.x - b.x);
    if (pts.length > 1)
      out.push(
        `<polyline fill="none" stroke="${s.color}" stroke-width="2" points="${pts.map((p) => `${sx(p.x)},${sy(p.y)}`).join(' ')}"/>`,
      );
    for (const p of pts) out.push(`<circle cx="${sx(p.x)}" cy="${sy(p.y)}" r="3" fill="${s.color}"/>`);
    out.push(`<rect x="${x0 + 10}" y="${y0 + 10 + i * 18}" width="10" height="10" fill="${s.color}"/>`);
    out.push(`<text x="${x0 + 26}" y="${y0 + 19 + i * 18}" font-size="12">${esc(s.name)}</text>`);
  });
  return out.join('\n');
}

function barPanel(
  x0: number,
  y0: number,
  w: number,
  h: number,
  title: string,
  yLabel: string,
  bars: { name: string; value: number; color: string }[],
): string {
  const yMax = niceMax(Math.max(1, ...bars.map((b) => b.value)));
  const out = [
    `<text x="${x0}" y="${y0 - 12}" font-weight="bold">${esc(title)}</text>`,
    `<rect x="${x0}" y="${y0}" width="${w}" height="${h}" fill="none" stroke="#999"/>`,
  ];
  const bw = w / (bars.length * 2 + 1);
  bars.forEach((b, i) => {
    const bh = (b.value / yMax) * h;
    const x = x0 + bw * (1 + i * 2);
    out.push(`<rect x="${x}" y="${y0 + h - bh}" width="${bw}" height="${bh}" fill="${b.color}"/>`);
    out.push(
      `<text x="${x + bw / 2}" y="${y0 + h - bh - 4}" text-anchor="middle" font-size="11">${b.value.toFixed(1)}</text>`,
    );
    out.push(`<text x="${x + bw / 2}" y="${y0 + h + 16}" text-anchor="middle" font-size="12">${esc(b.name)}</text>`);
  });
  out.push(
    `<text x="${x0 - 48}" y="${y0 + h / 2}" text-anchor="middle" font-size="12" transform="rotate(-90 ${x0 - 48} ${y0 + h / 2})">${esc(yLabel)}</text>`,
  );
  return out.join('\n');
}

export function renderChart(opts: {
  title: string;
  memory: Series[];
  throughput: { name: string; value: number; color: string }[];
}): string {
  const W = 1000;
  const H = 420;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="24" text-anchor="middle" font-size="16" font-weight="bold">${esc(opts.title)}</text>`,
    linePanel(80, 70, 520, 280, 'Resident memory (all processes) vs agents', 'agents', 'MiB', opts.memory),
    barPanel(700, 70, 260, 280, 'Completions per second', 'completions/s', opts.throughput),
    `</svg>`,
  ].join('\n');
}
