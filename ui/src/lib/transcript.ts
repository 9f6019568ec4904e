// Turns the raw lines of a session (stored rows and lines heard live) into what a person reads:
// their turns, the assistant's text, tool calls with input and result, decisions, results.
// Claude Code's lines are read here; Codex's and ACP agents' in transcriptAgents.ts.
import type { Decision } from '../api/client';
import { readAcp, readCodex } from './transcriptAgents';

export type ToolItem = {
  kind: 'tool';
  key: string;
  at: string;
  toolUseId: string;
  name: string;
  input: unknown;
  result?: { text: string; isError: boolean };
  decision?: Decision;
};

export type ResultItem = {
  kind: 'result';
  key: string;
  at: string;
  ok: boolean;
  /** Stopped on request: shown as a neutral "Interrupted", not as a failure. */
  interrupted?: boolean;
  text: string;
  cost?: number;
  durationMs?: number;
};

export type Item =
  | { kind: 'user'; key: string; text: string; at: string }
  | { kind: 'assistant'; key: string; text: string; at: string }
  | ToolItem
  | ResultItem
  | { kind: 'system'; key: string; at: string; text: string }
  | { kind: 'stderr'; key: string; at: string; text: string };

/** What the builder reads of a line: a stored row (keyed by id) or a live one (by key). */
export interface TranscriptLine {
  id?: number;
  key?: string;
  direction: string;
  message_type: string;
  message_subtype?: string | null;
  content: string;
  timestamp: string;
}

export type Json = Record<string, unknown>;
type Block = { type?: string; text?: string; id?: string; name?: string; input?: unknown; tool_use_id?: string; content?: unknown; is_error?: boolean };

/** Claude Code's words for "the user stopped this turn", in the user line that follows. */
const INTERRUPT_MARK = '[Request interrupted by user';

/** The state of one build: the items so far and what later lines refer back to. */
export class Builder {
  readonly items: Item[] = [];
  private readonly tools = new Map<string, ToolItem>();
  private interruptAsked = false;
  /** Index of the last turn the user sent. */
  private lastUser = -1;
  /** The assistant item that streamed chunks (ACP) are appended to, while nothing else came. */
  private streaming: Extract<Item, { kind: 'assistant' }> | undefined;
  sawInit = false;
  lastModel: string | undefined;

  constructor(private readonly byToolUse: Map<string, Decision>) {}

  push(item: Item): void {
    this.items.push(item);
    this.streaming = undefined;
  }

  user(key: string, at: string, text: string): void {
    this.push({ kind: 'user', key, at, text });
    this.lastUser = this.items.length - 1;
    this.interruptAsked = false;
  }

  /** Text that arrives in pieces (ACP chunks): one item per uninterrupted run of pieces. */
  appendText(key: string, at: string, text: string): void {
    if (this.streaming) {
      this.streaming.text += text;
      return;
    }
    const item = { kind: 'assistant' as const, key, at, text };
    this.push(item);
    this.streaming = item;
  }

  tool(key: string, at: string, toolUseId: string, name: string, input: unknown): ToolItem {
    const existing = this.tools.get(toolUseId);
    if (existing) return existing;
    const item: ToolItem = { kind: 'tool', key, at, toolUseId, name, input, decision: this.byToolUse.get(toolUseId) };
    this.tools.set(toolUseId, item);
    this.push(item);
    return item;
  }

  toolResult(toolUseId: string | undefined, text: string, isError: boolean): void {
    const tool = toolUseId ? this.tools.get(toolUseId) : undefined;
    if (tool) tool.result = { text, isError };
  }

  /**
   * The user stopped the turn. A failed result of that turn already shown (the mark can come
   * after it) is turned into "Interrupted"; otherwise the next one will be.
   */
  interrupt(): void {
    for (let i = this.items.length - 1; i > this.lastUser; i--) {
      const item = this.items[i];
      if (item.kind === 'result') {
        if (!item.ok && item.text === 'error_during_execution') item.interrupted = true;
        return;
      }
    }
    this.interruptAsked = true;
  }

  /** A turn's end. `failedByInterrupt`: this failure is what an interrupt looks like. */
  result(item: Omit<ResultItem, 'kind'>, failedByInterrupt: boolean): void {
    const interrupted = item.interrupted || (failedByInterrupt && this.interruptAsked);
    this.push({ kind: 'result', ...item, interrupted: interrupted || undefined });
    this.interruptAsked = false;
  }
}

export function buildTranscript(lines: readonly TranscriptLine[], decisions: Decision[] = []): Item[] {
  const byToolUse = new Map<string, Decision>();
  // Newest first from the API: keep the last decision for a call (a hook, then maybe can_use_tool).
  for (let i = decisions.length - 1; i >= 0; i--) {
    const d = decisions[i];
    if (d.tool_use_id) byToolUse.set(d.tool_use_id, d);
  }
  const b = new Builder(byToolUse);
  for (const m of lines) {
    const key = m.key ?? String(m.id);
    if (m.message_type === 'stderr') {
      b.push({ kind: 'stderr', key, at: m.timestamp, text: m.content });
      continue;
    }
    const line = parse(m.content);
    if (!line) continue;
    if (m.direction === 'to_cli') {
      if (m.message_type === 'user') b.user(key, m.timestamp, textOf((line.message as Json | undefined)?.content));
      else if (m.message_type === 'control_request' && m.message_subtype === 'interrupt') b.interrupt();
      continue;
    }
    if (!readClaude(b, m, line, key)) readCodex(b, m, line, key) || readAcp(b, m, line, key);
  }
  return b.items;
}

/** Reads a line of Claude Code's; false when it is not one this reads. */
function readClaude(b: Builder, m: TranscriptLine, line: Json, key: string): boolean {
  const content = (line.message as { content?: unknown } | undefined)?.content;
  switch (m.message_type) {
    case 'user':
      // The CLI reports tool results as user lines, and an interrupt as a user line's text.
      if (typeof content === 'string' && content.startsWith(INTERRUPT_MARK)) b.interrupt();
      for (const block of blocks(content)) {
        const text = block.type === 'tool_result' ? textOf(block.content) : (block.text ?? '');
        if (text.startsWith(INTERRUPT_MARK)) b.interrupt();
        if (block.type === 'tool_result') b.toolResult(block.tool_use_id, text, block.is_error === true);
      }
      return true;
    case 'assistant':
      blocks(content).forEach((block, i) => {
        if (block.type === 'text' && block.text) b.push({ kind: 'assistant', key: `${key}.${i}`, at: m.timestamp, text: block.text });
        if (block.type === 'tool_use' && block.id) b.tool(`${key}.${i}`, m.timestamp, block.id, block.name ?? 'tool', block.input);
      });
      return true;
    case 'result': {
      const subtype = typeof line.subtype === 'string' ? line.subtype : undefined;
      b.result(
        {
          key, at: m.timestamp,
          ok: line.is_error !== true && (subtype === undefined || subtype === 'success'),
          text: typeof line.result === 'string' ? line.result : String(subtype ?? 'finished'),
          cost: typeof line.total_cost_usd === 'number' ? line.total_cost_usd : undefined,
          durationMs: typeof line.duration_ms === 'number' ? line.duration_ms : undefined,
        },
        subtype === 'error_during_execution',
      );
      return true;
    }
    case 'system':
      if (m.message_subtype === 'init') {
        // The CLI repeats its init at every turn: say it once, and again only when the model changed.
        const model = typeof line.model === 'string' ? line.model : undefined;
        if (b.sawInit && model === b.lastModel) return true;
        b.sawInit = true;
        b.lastModel = model;
        b.push({ kind: 'system', key, at: m.timestamp, text: model ? `Running ${model}.` : 'The CLI is ready.' });
      } else if (m.message_subtype === 'api_retry') {
        const attempt = typeof line.attempt === 'number' ? ` (attempt ${line.attempt} of ${line.max_retries ?? '?'})` : '';
        b.push({ kind: 'system', key, at: m.timestamp, text: `The model API did not answer; the CLI retries${attempt}.` });
      }
      return true;
    default:
      return false;
  }
}

export function parse(text: string): Json | null {
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : null;
  } catch {
    return null;
  }
}

function blocks(content: unknown): Block[] {
  return Array.isArray(content) ? (content.filter((b) => b && typeof b === 'object') as Block[]) : [];
}

/** The text of a string or of content blocks; other values as JSON. */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return blocks(content)
      .map((b) => (b.type === 'text' ? (b.text ?? '') : ''))
      .filter(Boolean)
      .join('\n');
  }
  return content === undefined || content === null ? '' : JSON.stringify(content, null, 2);
}
