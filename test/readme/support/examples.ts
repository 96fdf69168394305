/**
 * The README's examples as data: its fenced `sh` blocks, each with the output block that follows
 * it, so a test can run the commands and hold the answers to what the README shows.
 *
 * Conventions the README follows (and this module enforces):
 * - an `sh` block is a command to run; the first `json`, `text`, `http` or unlabelled block after
 *   it, before the next `sh` block, is what it prints;
 * - `<!-- readme-test: skip: <reason> -->` on the line before an `sh` block: not run (it starts a
 *   server, or is a template with placeholders), and its output is not compared;
 * - `<!-- readme-test: stack -->`: the `npm start` block; its output is compared with what the
 *   stack the test started printed.
 */

export type Marker = { kind: 'run' } | { kind: 'skip'; reason: string } | { kind: 'stack' };

export interface FencedBlock {
  lang: string;
  body: string;
  /** 1-based line of the opening fence in the README. */
  line: number;
  /** The `##`/`###` heading the block sits under, for messages. */
  heading: string;
  marker: Marker | undefined;
}

export interface Example {
  command: FencedBlock;
  marker: Marker;
  expected: FencedBlock | undefined;
}

const OUTPUT_LANGS = new Set(['', 'json', 'text', 'http']);
const MARKER = /^<!--\s*readme-test:\s*(skip|stack)(?::\s*(.*?))?\s*-->\s*$/;

/** The text of each top-level (`## `) section whose title is listed, in README order. */
export function sections(readme: string, titles: string[]): { title: string; text: string; firstLine: number }[] {
  const lines = readme.split('\n');
  const found: { title: string; text: string; firstLine: number }[] = [];
  let fence = false;
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].startsWith('```')) fence = !fence;
    const title = !fence && /^## (.+)$/.exec(lines[i])?.[1];
    if (!title || !titles.includes(title.trim())) continue;
    let end = i + 1;
    let inner = false;
    for (; end < lines.length; end++) {
      if (lines[end].startsWith('```')) inner = !inner;
      if (!inner && lines[end].startsWith('## ')) break;
    }
    found.push({ title: title.trim(), text: lines.slice(i, end).join('\n'), firstLine: i + 1 });
  }
  return found;
}

/** Every fenced block of a section, with the marker comment right above it (blank lines allowed). */
export function fencedBlocks(text: string, firstLine = 1): FencedBlock[] {
  const lines = text.split('\n');
  const blocks: FencedBlock[] = [];
  let heading = '';
  for (let i = 0; i < lines.length; i++) {
    const headingMatch = /^#{2,4} (.+)$/.exec(lines[i]);
    if (headingMatch) heading = headingMatch[1];
    const open = /^```(\w*)\s*$/.exec(lines[i]);
    if (!open) continue;
    let close = i + 1;
    while (close < lines.length && !lines[close].startsWith('```')) close++;
    let above = i - 1;
    while (above >= 0 && lines[above].trim() === '') above--;
    const markerMatch = above >= 0 ? MARKER.exec(lines[above].trim()) : null;
    let marker: Marker | undefined;
    if (markerMatch) marker = markerMatch[1] === 'stack' ? { kind: 'stack' } : { kind: 'skip', reason: markerMatch[2] ?? '' };
    blocks.push({ lang: open[1], body: lines.slice(i + 1, close).join('\n'), line: firstLine + i, heading, marker });
    i = close;
  }
  return blocks;
}

/** Pairs each `sh` block with its output block. */
export function examples(blocks: FencedBlock[]): Example[] {
  const out: Example[] = [];
  for (let i = 0; i < blocks.length; i++) {
    if (blocks[i].lang !== 'sh') continue;
    let expected: FencedBlock | undefined;
    for (let j = i + 1; j < blocks.length && blocks[j].lang !== 'sh'; j++) {
      if (OUTPUT_LANGS.has(blocks[j].lang)) {
        expected = blocks[j];
        break;
      }
    }
    out.push({ command: blocks[i], marker: blocks[i].marker ?? { kind: 'run' }, expected });
  }
  return out;
}

/**
 * Whether running a command again changes nothing, so it may be repeated until its answer is the
 * one shown (a job still running, a callback not yet arrived). Anything that sends a body, names a
 * method or calls the admin CLI runs exactly once.
 */
export function isRepeatable(command: string): boolean {
  return !/(^|\s)(-d|-F|-X|-T|--data[\w-]*|--form|--request)(\s|=|$)|\bnpm\b|>/.test(command);
}
