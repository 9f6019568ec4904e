// Turns the raw lines of a session (`GET /api/sessions/{id}/messages`) into what a person reads:
// their turns, the assistant's text, tool calls with input and result, decisions, results.
import type { Decision, Message } from '../api/client';

export type Item =
  | { kind: 'user'; key: string; text: string; at: string }
  | { kind: 'assistant'; key: string; text: string; at: string }
  | {
      kind: 'tool';
      key: string;
      at: string;
      toolUseId: string;
      name: string;
      input: unknown;
      result?: { text: string; isError: boolean };
      decision?: Decision;
    }
  | { kind: 'result'; key: string; at: string; ok: boolean; text: string; cost?: number; durationMs?: number }
  | { kind: 'system'; key: string; at: string; text: string }
  | { kind: 'stderr'; key: string; at: string; text: string };

type Block = { type?: string; text?: string; id?: string; name?: string; input?: unknown; tool_use_id?: string; content?: unknown; is_error?: boolean };

export function buildTranscript(messages: Message[], decisions: Decision[] = []): Item[] {
  const byToolUse = new Map<string, Decision>();
  // Newest first from the API: keep the last decision for a call (a hook, then maybe can_use_tool).
  for (const d of [...decisions].reverse()) if (d.tool_use_id) byToolUse.set(d.tool_use_id, d);
  const items: Item[] = [];
  const tools = new Map<string, Extract<Item, { kind: 'tool' }>>();
  let sawInit = false;
  let lastModel: string | undefined;

  for (const m of messages) {
    const key = String(m.id);
    if (m.message_type === 'stderr') {
      items.push({ kind: 'stderr', key, at: m.timestamp, text: m.content });
      continue;
    }
    const line = parse(m.content);
    if (!line) continue;
    const content = (line.message as { content?: unknown } | undefined)?.content;
    if (m.message_type === 'user' && m.direction === 'to_cli') {
      items.push({ kind: 'user', key, at: m.timestamp, text: textOf(content) });
    } else if (m.message_type === 'user') {
      // The CLI reports tool results as user lines.
      for (const b of blocks(content)) {
        const tool = b.tool_use_id ? tools.get(b.tool_use_id) : undefined;
        if (b.type === 'tool_result' && tool) tool.result = { text: textOf(b.content), isError: b.is_error === true };
      }
    } else if (m.message_type === 'assistant') {
      blocks(content).forEach((b, i) => {
        if (b.type === 'text' && b.text) items.push({ kind: 'assistant', key: `${key}.${i}`, at: m.timestamp, text: b.text });
        if (b.type === 'tool_use' && b.id) {
          const tool: Extract<Item, { kind: 'tool' }> = {
            kind: 'tool', key: `${key}.${i}`, at: m.timestamp, toolUseId: b.id, name: b.name ?? 'tool', input: b.input,
            decision: byToolUse.get(b.id),
          };
          tools.set(b.id, tool);
          items.push(tool);
        }
      });
    } else if (m.message_type === 'result') {
      items.push({
        kind: 'result', key, at: m.timestamp,
        ok: line.is_error !== true && (line.subtype === undefined || line.subtype === 'success'),
        text: typeof line.result === 'string' ? line.result : String(line.subtype ?? 'finished'),
        cost: typeof line.total_cost_usd === 'number' ? line.total_cost_usd : undefined,
        durationMs: typeof line.duration_ms === 'number' ? line.duration_ms : undefined,
      });
    } else if (m.message_type === 'system' && m.message_subtype === 'init') {
      // The CLI repeats its init at every turn: say it once, and again only when the model changed.
      const model = typeof line.model === 'string' ? line.model : undefined;
      if (sawInit && model === lastModel) continue;
      sawInit = true;
      lastModel = model;
      items.push({ kind: 'system', key, at: m.timestamp, text: model ? `Running ${model}.` : 'The CLI is ready.' });
    } else if (m.message_type === 'system' && m.message_subtype === 'api_retry') {
      const attempt = typeof line.attempt === 'number' ? ` (attempt ${line.attempt} of ${line.max_retries ?? '?'})` : '';
      items.push({ kind: 'system', key, at: m.timestamp, text: `The model API did not answer; the CLI retries${attempt}.` });
    }
  }
  return items;
}

function parse(text: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function blocks(content: unknown): Block[] {
  return Array.isArray(content) ? (content.filter((b) => b && typeof b === 'object') as Block[]) : [];
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  return blocks(content)
    .map((b) => (b.type === 'text' ? (b.text ?? '') : ''))
    .filter(Boolean)
    .join('\n');
}
