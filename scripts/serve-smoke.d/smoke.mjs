// The official npm `openai` client against `forge serve` (scripts/serve-smoke).
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.env.FORGE_URL, apiKey: process.env.FORGE_KEY, maxRetries: 0 });
const fail = (msg) => { console.error("serve-smoke: " + msg); process.exit(1); };

const models = await client.models.list();
if (models.data.length !== 1 || !models.data[0].id) fail("models: " + JSON.stringify(models.data));
const model = models.data[0].id;

const messages = [{ role: "developer", content: "You write Go." }, { role: "user", content: [{ type: "text", text: "Write a hello world." }] }];
const whole = await client.chat.completions.create({ model, messages, max_tokens: 24, temperature: 0 });
const text = whole.choices[0].message.content;
if (!text || whole.usage.completion_tokens !== 24) fail("chat: " + JSON.stringify(whole));

const again = await client.chat.completions.create({ model, messages, max_tokens: 24, temperature: 0 });
if (again.choices[0].message.content !== text) fail("the same request again gave another reply");
if (!(again.usage.prompt_tokens_details.cached_tokens > 0)) fail("the same request again reused no cached tokens");

const stream = await client.chat.completions.create({ model, messages, max_tokens: 24, temperature: 0, stream: true, stream_options: { include_usage: true } });
let streamed = "", role = "", usage = null;
for await (const chunk of stream) {
  if (chunk.usage) usage = chunk.usage;
  for (const c of chunk.choices) {
    if (c.delta.role) role = c.delta.role;
    if (c.delta.content) streamed += c.delta.content;
  }
}
if (streamed !== text || role !== "assistant" || !usage) fail(`stream: ${JSON.stringify(streamed)} vs ${JSON.stringify(text)}, role ${role}, usage ${JSON.stringify(usage)}`);

const comp = await client.completions.create({ model, prompt: "def fib(n):", max_tokens: 8, temperature: 0 });
if (!comp.choices[0].text) fail("completions: " + JSON.stringify(comp));

try {
  await client.chat.completions.create({ model, messages: [], max_tokens: 4 });
  fail("an empty message list was accepted");
} catch (e) {
  if (!(e instanceof OpenAI.APIError) || e.status !== 400 || !e.message) fail("error: " + e);
}
console.log(`serve-smoke: ok (npm openai, chat ${JSON.stringify(text.slice(0, 40))}…, cached ${again.usage.prompt_tokens_details.cached_tokens} tokens)`);
