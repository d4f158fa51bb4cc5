//! How `serve --stdio` reads and runs its requests: a few worker threads
//! that take turns reading standard input ("leader and followers"). The
//! worker that reads a request runs it itself when no other worker is
//! running one of its session's, so a request reaches the thread that runs
//! it without a hand-off: waking a second, idle thread for every request
//! cost more than anything else the server adds to the library call.
//!
//! What the protocol promises holds as with a thread per session: one
//! session's requests run one at a time in the order they came (a request
//! that arrives while its session is busy waits in that session's queue and
//! runs next, on the worker already running the session), different
//! sessions' at the same time, and standard input is always being read while
//! requests run: before a worker starts one, it makes sure another is left to
//! read (spawning one if none is), so a request that waits for a lock another
//! request of the input will release (a held checkpoint's commit) is never
//! stuck behind itself.

use std::collections::{HashMap, VecDeque};
use std::io::BufRead;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use super::{Output, Request, Server, error_response};

/// The requests of one session waiting to run, and whether a worker is
/// running that session's requests now.
#[derive(Default)]
struct Lane {
    queue: VecDeque<Request>,
    busy: bool,
}

/// Standard input, read by one worker at a time.
struct Input {
    lines: std::io::Split<std::io::BufReader<std::io::Stdin>>,
    /// Lines read so far (for the line numbers of errors).
    read: usize,
    /// Input ended (or standard output was closed): every worker stops.
    done: bool,
}

/// What the workers share.
struct Pool {
    server: Arc<Server>,
    out: Arc<Output>,
    input: Mutex<Input>,
    /// Each session's lane, by the session a request names (else the
    /// server's).
    lanes: Mutex<HashMap<Option<String>, Lane>>,
    /// Workers not running a request (reading, or waiting to read).
    readers: Mutex<usize>,
    workers: Mutex<Vec<JoinHandle<()>>>,
}

/// A mutex's guard, whether or not a worker panicked holding it: what it
/// guards stays consistent (each change is one assignment).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Serves standard input until it ends (or standard output is closed), then
/// waits for every request read to be answered.
pub(super) fn serve(server: Arc<Server>, out: Arc<Output>) {
    let pool = Arc::new(Pool {
        server,
        out,
        input: Mutex::new(Input {
            lines: std::io::BufReader::new(std::io::stdin()).split(b'\n'),
            read: 0,
            done: false,
        }),
        lanes: Mutex::new(HashMap::new()),
        readers: Mutex::new(0),
        workers: Mutex::new(Vec::new()),
    });
    spawn(&pool);
    // A worker adds the workers it spawns before it ends, so once this
    // finds the list empty, every worker has ended.
    loop {
        let Some(worker) = lock(&pool.workers).pop() else {
            break;
        };
        let _ = worker.join();
    }
}

/// Starts one more worker, counted as a reader from the start.
fn spawn(pool: &Arc<Pool>) {
    *lock(&pool.readers) += 1;
    let p = pool.clone();
    lock(&pool.workers).push(std::thread::spawn(move || work(&p)));
}

/// A worker: read a request, run it (and whatever its session queued
/// meanwhile), read the next, until the input ends.
fn work(pool: &Arc<Pool>) {
    while let Some((key, req)) = next_to_run(pool) {
        // About to stop reading: leave a reader behind.
        {
            let mut readers = lock(&pool.readers);
            *readers -= 1;
            if *readers == 0 {
                drop(readers);
                spawn(pool);
            }
        }
        let mut req = req;
        loop {
            pool.out.send(&pool.server.respond(&req));
            let mut lanes = lock(&pool.lanes);
            let lane = lanes.entry(key.clone()).or_default();
            match lane.queue.pop_front() {
                Some(next) => req = next,
                None => {
                    lane.busy = false;
                    break;
                }
            }
        }
        *lock(&pool.readers) += 1;
    }
}

/// Reads lines until one is a request this worker is to run: its session
/// has no request running (requests of a busy session join its queue). Bad
/// lines are answered here. `None` at the end of input.
fn next_to_run(pool: &Pool) -> Option<(Option<String>, Request)> {
    let mut input = lock(&pool.input);
    loop {
        if input.done || pool.out.closed.load(Ordering::Relaxed) {
            input.done = true;
            return None;
        }
        let Some(Ok(line)) = input.lines.next() else {
            input.done = true;
            return None;
        };
        input.read += 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let req = match Request::parse(&line, input.read) {
            Ok(req) => req,
            Err(bad) => {
                pool.out.send(&error_response(&bad.id, &bad.error));
                continue;
            }
        };
        let key = req.session.clone().or(pool.server.defaults.session.clone());
        // Decided while the input is held, so that a session's requests
        // are queued or run in the order they were read.
        let mut lanes = lock(&pool.lanes);
        let lane = lanes.entry(key.clone()).or_default();
        if lane.busy {
            lane.queue.push_back(req);
            continue;
        }
        lane.busy = true;
        return Some((key, req));
    }
}
