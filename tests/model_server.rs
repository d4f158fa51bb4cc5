//! A scripted model on 127.0.0.1, for running the real agents offline: a
//! plain HTTP/1.1 server (std `TcpListener`) that answers each model request
//! with the next scripted reply as server-sent events, in the wire format of
//! the API the agent speaks (Anthropic Messages for Claude Code, OpenAI
//! Responses for Codex, Gemini `streamGenerateContent` for Gemini CLI).
//! Requests that are not the agent's main loop (a title, a quota check) get
//! a short text reply and do not use up the script.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// One scripted reply of the model.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Tool calls: (call id, tool name, input).
    Tools(Vec<(String, String, Value)>),
    /// A final text answer: the turn ends.
    Text(String),
}

/// The wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    Anthropic,
    /// OpenAI Responses (`POST /v1/responses`), as Codex calls it.
    Responses,
    /// Gemini `streamGenerateContent?alt=sse`, as Gemini CLI calls it.
    Gemini,
}

/// A running scripted model.
pub struct ModelServer {
    pub port: u16,
    script: Arc<Mutex<VecDeque<Reply>>>,
}

impl ModelServer {
    /// A server on 127.0.0.1, in the network namespace `netns` names (a
    /// `/proc/<pid>/ns/net`) when given: its thread moves there before it
    /// binds, and every thread it starts is there too.
    pub fn start(api: Api, netns: Option<&std::path::Path>) -> ModelServer {
        let script = Arc::new(Mutex::new(VecDeque::new()));
        let s = script.clone();
        let netns = netns.map(|p| p.to_owned());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            if let Some(ns) = netns {
                enter_netns(&ns);
            }
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            tx.send(listener.local_addr().unwrap().port()).unwrap();
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let s = s.clone();
                std::thread::spawn(move || {
                    let _ = serve(stream, api, &s);
                });
            }
        });
        let port = rx.recv().unwrap();
        ModelServer { port, script }
    }

    /// Queues replies for the next model requests of the main loop.
    pub fn push(&self, replies: impl IntoIterator<Item = Reply>) {
        self.script.lock().unwrap().extend(replies);
    }

    /// Replies not used yet.
    pub fn left(&self) -> usize {
        self.script.lock().unwrap().len()
    }
}

/// Moves this thread into the network namespace at `ns`.
#[cfg(target_os = "linux")]
fn enter_netns(ns: &std::path::Path) {
    use std::os::fd::AsFd;
    let f = std::fs::File::open(ns).unwrap();
    rustix::thread::move_into_link_name_space(
        f.as_fd(),
        Some(rustix::thread::LinkNameSpaceType::Network),
    )
    .unwrap_or_else(|e| panic!("setns {}: {e}", ns.display()));
}

#[cfg(not(target_os = "linux"))]
fn enter_netns(_ns: &std::path::Path) {
    unreachable!("network namespaces are Linux's")
}

fn serve(mut stream: TcpStream, api: Api, script: &Mutex<VecDeque<Reply>>) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut length = 0usize;
    loop {
        let mut h = String::new();
        reader.read_line(&mut h)?;
        if h == "\r\n" || h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
    let model_path = match api {
        Api::Anthropic => path.starts_with("/v1/messages") && !path.contains("count_tokens"),
        Api::Responses => path.starts_with("/v1/responses"),
        Api::Gemini => path.contains(":streamGenerateContent") || path.contains(":generateContent"),
    };
    if !model_path {
        let body = b"{}";
        write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        )?;
        return stream.write_all(body);
    }
    // The main loop offers tools; a side request (a title) does not.
    let main_tool = match api {
        Api::Anthropic => "Write",
        Api::Responses => "apply_patch",
        Api::Gemini => "write_file",
    };
    let main = match api {
        Api::Gemini => {
            path.contains(":streamGenerateContent")
                && request["tools"].as_array().into_iter().flatten().any(|t| {
                    t["functionDeclarations"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|f| f["name"] == "write_file")
                })
        }
        _ => request
            .get("tools")
            .and_then(Value::as_array)
            .is_some_and(|t| t.iter().any(|t| t["name"] == main_tool)),
    };
    if std::env::var_os("TURNBACK_MODEL_DEBUG").is_some() {
        let names: Vec<&Value> = request["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| &t["name"])
            .collect();
        eprintln!("model request {path}: main={main} tools={names:?}");
    }
    let reply = if main {
        script
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(Reply::Text("(the script is over)".into()))
    } else {
        Reply::Text("Scripted".into())
    };
    if api == Api::Gemini && !path.contains(":streamGenerateContent") {
        // A side request that wants one JSON answer (a check of its own).
        let body = gemini_chunk(&reply).to_string();
        write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        )?;
        return stream.write_all(body.as_bytes());
    }
    if api == Api::Gemini {
        stream.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n",
        )?;
        write!(stream, "data: {}\r\n\r\n", gemini_chunk(&reply))?;
        return stream.flush();
    }
    let events = match api {
        Api::Anthropic => anthropic_events(&reply),
        Api::Responses | Api::Gemini => responses_events(&reply),
    };
    stream.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n",
    )?;
    for (name, data) in events {
        write!(stream, "event: {name}\ndata: {data}\n\n")?;
    }
    stream.flush()
}

/// A reply as Anthropic Messages API stream events.
fn anthropic_events(reply: &Reply) -> Vec<(&'static str, Value)> {
    let mut ev = vec![(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": "msg_scripted", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": [], "stop_reason": null,
            "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    )];
    let stop = match reply {
        Reply::Text(text) => {
            ev.push((
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ));
            ev.push((
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
            ));
            ev.push((
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ));
            "end_turn"
        }
        Reply::Tools(calls) => {
            for (i, (id, name, input)) in calls.iter().enumerate() {
                ev.push((
                    "content_block_start",
                    json!({"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
                ));
                ev.push((
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}),
                ));
                ev.push((
                    "content_block_stop",
                    json!({"type": "content_block_stop", "index": i}),
                ));
            }
            "tool_use"
        }
    };
    ev.push((
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 5}}),
    ));
    ev.push(("message_stop", json!({"type": "message_stop"})));
    ev
}

/// A reply as OpenAI Responses stream events. A call named `apply_patch` is
/// a freeform (custom) tool call whose input is the patch text (`input`'s
/// `patch`); any other is a function call with JSON arguments.
fn responses_events(reply: &Reply) -> Vec<(&'static str, Value)> {
    let mut ev = vec![(
        "response.created",
        json!({"type": "response.created", "response": {"id": "resp_scripted"}}),
    )];
    let items: Vec<Value> = match reply {
        Reply::Text(text) => vec![json!({
            "type": "message", "role": "assistant", "id": "msg_scripted",
            "content": [{"type": "output_text", "text": text}]
        })],
        Reply::Tools(calls) => calls
            .iter()
            .map(|(id, name, input)| {
                if name == "apply_patch" {
                    json!({"type": "custom_tool_call", "id": format!("ctc_{id}"), "call_id": id,
                           "name": name, "input": input["patch"]})
                } else {
                    json!({"type": "function_call", "id": format!("fc_{id}"), "call_id": id,
                           "name": name, "arguments": input.to_string()})
                }
            })
            .collect(),
    };
    for item in items {
        ev.push((
            "response.output_item.added",
            json!({"type": "response.output_item.added", "item": item}),
        ));
        ev.push((
            "response.output_item.done",
            json!({"type": "response.output_item.done", "item": item}),
        ));
    }
    ev.push((
        "response.completed",
        json!({"type": "response.completed", "response": {"id": "resp_scripted",
            "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": 15}}}),
    ));
    ev
}

/// A reply as one Gemini `GenerateContentResponse`.
fn gemini_chunk(reply: &Reply) -> Value {
    let parts: Vec<Value> = match reply {
        Reply::Text(text) => vec![json!({ "text": text })],
        Reply::Tools(calls) => calls
            .iter()
            .map(|(_, name, args)| json!({"functionCall": {"name": name, "args": args}}))
            .collect(),
    };
    json!({
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "gemini-2.5-flash"
    })
}
