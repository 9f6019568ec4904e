// The transcript builder's readers for the JSON-RPC agents: Codex (`codex app-server`
// notifications) and ACP agents such as Gemini CLI (`session/update` notifications, and the
// answer to `session/prompt` that ends a turn). Conduit stores the user's turns in Claude Code's
// shape for every agent, so those are read in transcript.ts.
import type { Builder, Json, TranscriptLine } from './transcript';
import { textOf } from './transcript';

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const obj = (v: unknown): Json => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});

/** Reads a Codex notification; false when it is not one this reads. */
export function readCodex(b: Builder, m: TranscriptLine, line: Json, key: string): boolean {
  const params = obj(line.params);
  const item = obj(params.item);
  const at = m.timestamp;
  switch (m.message_type) {
    case 'item/started': {
      const tool = codexTool(item);
      if (tool && str(item.id)) b.tool(key, at, str(item.id) as string, tool.name, tool.input);
      return true;
    }
    case 'item/completed': {
      const id = str(item.id);
      if (item.type === 'agentMessage') {
        if (str(item.text)) b.push({ kind: 'assistant', key, at, text: item.text as string });
        return true;
      }
      const tool = codexTool(item);
      if (!tool || !id) return true;
      b.tool(key, at, id, tool.name, tool.input);
      const status = str(item.status);
      const exit = typeof item.exitCode === 'number' ? item.exitCode : undefined;
      const failed = status === 'failed' || status === 'declined' || (exit !== undefined && exit !== 0);
      const output = item.aggregatedOutput ?? item.result ?? item.error ?? item.contentItems ?? status ?? '';
      b.toolResult(id, textOf(output), failed);
      return true;
    }
    case 'turn/completed': {
      const turn = obj(params.turn);
      const status = str(turn.status) ?? 'failed';
      const message = str(obj(turn.error).message);
      b.result(
        { key, at, ok: status === 'completed', interrupted: status === 'interrupted' || undefined, text: message ?? status },
        false,
      );
      return true;
    }
    case 'error':
      if (params.willRetry !== true) {
        const message = str(obj(params.error).message) ?? 'Codex reported an error.';
        b.push({ kind: 'system', key, at, text: `The agent reported an error: ${message}` });
      }
      return true;
    default:
      return false;
  }
}

/** A Codex item that is a tool call, named as Conduit's rules name it. */
function codexTool(item: Json): { name: string; input: unknown } | undefined {
  switch (item.type) {
    case 'commandExecution':
      return { name: 'Bash', input: { command: item.command, cwd: item.cwd } };
    case 'fileChange':
      return { name: 'Edit', input: { changes: item.changes } };
    case 'mcpToolCall':
      return { name: `mcp__${str(item.server) ?? 'unknown'}__${str(item.tool) ?? 'unknown'}`, input: item.arguments };
    case 'dynamicToolCall':
      return { name: str(item.tool) ?? 'tool', input: item.arguments };
    case 'webSearch':
      return { name: 'WebSearch', input: { query: item.query } };
    default:
      return undefined;
  }
}

/** Reads an ACP agent's line; false when it is not one this reads. */
export function readAcp(b: Builder, m: TranscriptLine, line: Json, key: string): boolean {
  const at = m.timestamp;
  switch (m.message_type) {
    case 'session/update': {
      const update = obj(obj(line.params).update);
      const id = str(update.toolCallId);
      switch (update.sessionUpdate) {
        case 'agent_message_chunk': {
          const text = str(obj(update.content).text) ?? '';
          // Gemini CLI announces a mode switch as a text chunk: not the model's words.
          if (text && !text.startsWith('[MODE_UPDATE]')) b.appendText(key, at, text);
          break;
        }
        case 'tool_call':
          if (id) b.tool(key, at, id, str(update.title) ?? str(update.kind) ?? 'tool', update.rawInput ?? update.locations ?? {});
          break;
        case 'tool_call_update': {
          const status = str(update.status);
          if (id && (status === 'completed' || status === 'failed')) {
            b.toolResult(id, acpOutput(update.rawOutput ?? update.content), status === 'failed');
          }
          break;
        }
      }
      return true;
    }
    case 'control_response': {
      // The answer to `session/prompt` ends the turn; answers to other requests say nothing here.
      const reason = str(obj(line.result).stopReason);
      if (reason) {
        b.result({ key, at, ok: reason === 'end_turn', interrupted: reason === 'cancelled' || undefined, text: reason }, false);
      }
      return true;
    }
    case 'turn.result': {
      // A turn's end heard as the normalized event (an ACP turn's answer is not relayed raw).
      const status = str(line.status) ?? 'completed';
      b.result(
        { key, at, ok: status === 'completed', interrupted: status === 'interrupted' || undefined, text: status },
        false,
      );
      return true;
    }
    default:
      return false;
  }
}

/** ACP tool output: content blocks `{type:"content",content:{type:"text",text}}` or raw JSON. */
function acpOutput(output: unknown): string {
  if (Array.isArray(output)) {
    const texts = output.map((c) => str(obj(obj(c).content).text) ?? str(obj(c).text)).filter(Boolean);
    if (texts.length > 0) return texts.join('\n');
  }
  return textOf(output);
}
