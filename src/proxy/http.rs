//! The server side of HTTP/1.1, as much as model clients use: requests read with `httparse`
//! (bodies by `Content-Length` or chunked), keep-alive, `Expect: 100-continue`, and responses
//! written whole or as chunks that leave as soon as they are written, which is what lets
//! server-sent events pass through as they arrive. One blocking thread per connection: the
//! upstream client is blocking too, and a model call's cost is the model, not the thread.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The largest request head accepted.
const MAX_HEAD: usize = 64 * 1024;
/// The largest request body accepted: long conversations with images stay well under it.
pub const MAX_BODY: usize = 64 * 1024 * 1024;
/// How often a connection waiting for its next request looks at the stop flag.
const POLL: Duration = Duration::from_millis(200);
/// How long a request that has begun may take to arrive whole.
const REQUEST_PATIENCE: Duration = Duration::from_secs(60);

/// One request, read whole.
#[derive(Clone, Debug)]
pub struct Request {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The request target as sent: path and query.
    pub target: String,
    /// Headers in order, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub body: Vec<u8>,
    /// Whether the client asked to close the connection after the response.
    pub close: bool,
}

impl Request {
    /// The first value of a header, by lowercase name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The path without the query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }
}

/// Why a request could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// The bytes are not HTTP/1.1 as this server reads it: answered with a 400, then closed.
    Malformed(String),
    /// The connection failed or closed in the middle of a request: nothing to answer.
    Broken,
}

/// A client connection: the stream and the bytes read past the last request.
pub struct Connection {
    stream: TcpStream,
    buffer: Vec<u8>,
    stop: Arc<AtomicBool>,
}

impl Connection {
    /// Serves `stream` until it closes or `stop` is raised between requests.
    pub fn new(stream: TcpStream, stop: Arc<AtomicBool>) -> io::Result<Self> {
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(POLL))?;
        Ok(Connection {
            stream,
            buffer: Vec::new(),
            stop,
        })
    }

    /// The stream, to write a response to.
    pub fn stream(&mut self) -> &mut TcpStream {
        &mut self.stream
    }

    /// The next request; `None` when the client closed the connection between requests or the
    /// proxy is stopping.
    pub fn next_request(&mut self) -> Result<Option<Request>, ReadError> {
        let mut started: Option<Instant> = (!self.buffer.is_empty()).then(Instant::now);
        let (head_len, mut request) = loop {
            if !self.buffer.is_empty() {
                let mut headers = [httparse::EMPTY_HEADER; 96];
                let mut parsed = httparse::Request::new(&mut headers);
                match parsed.parse(&self.buffer) {
                    Ok(httparse::Status::Complete(len)) => break (len, head_of(&parsed)?),
                    Ok(httparse::Status::Partial) if self.buffer.len() > MAX_HEAD => {
                        return Err(ReadError::Malformed(
                            "the request head is over 64 KiB".to_owned(),
                        ));
                    }
                    Ok(httparse::Status::Partial) => {}
                    Err(err) => {
                        return Err(ReadError::Malformed(format!(
                            "the request head is not HTTP/1.1: {err}"
                        )));
                    }
                }
            }
            match self.fill(&mut started)? {
                Filled::More => {}
                Filled::Closed if self.buffer.is_empty() => return Ok(None),
                Filled::Closed => {
                    return Err(ReadError::Broken);
                }
                Filled::Idle => return Ok(None),
            }
        };
        self.buffer.drain(..head_len);
        let chunked = request
            .header("transfer-encoding")
            .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
        if request
            .header("expect")
            .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
        {
            self.stream
                .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
                .map_err(|_| ReadError::Broken)?;
        }
        request.body = if chunked {
            self.read_chunked(&mut started)?
        } else {
            let length = match request.header("content-length") {
                None => 0,
                Some(value) => value.trim().parse::<usize>().map_err(|_| {
                    ReadError::Malformed(format!("the content-length {value:?} is not a number"))
                })?,
            };
            if length > MAX_BODY {
                return Err(ReadError::Malformed(format!(
                    "the request body of {length} bytes is over the 64 MiB limit"
                )));
            }
            self.read_exact(length, &mut started)?
        };
        Ok(Some(request))
    }

    fn read_exact(
        &mut self,
        length: usize,
        started: &mut Option<Instant>,
    ) -> Result<Vec<u8>, ReadError> {
        while self.buffer.len() < length {
            match self.fill(started)? {
                Filled::More => {}
                Filled::Closed | Filled::Idle => {
                    return Err(ReadError::Broken);
                }
            }
        }
        Ok(self.buffer.drain(..length).collect())
    }

    fn read_line(&mut self, started: &mut Option<Instant>) -> Result<String, ReadError> {
        loop {
            if let Some(end) = self.buffer.windows(2).position(|w| w == b"\r\n") {
                let line: Vec<u8> = self.buffer.drain(..end + 2).take(end).collect();
                return Ok(String::from_utf8_lossy(&line).into_owned());
            }
            if self.buffer.len() > MAX_HEAD {
                return Err(ReadError::Malformed("a chunk line is too long".to_owned()));
            }
            match self.fill(started)? {
                Filled::More => {}
                Filled::Closed | Filled::Idle => {
                    return Err(ReadError::Broken);
                }
            }
        }
    }

    fn read_chunked(&mut self, started: &mut Option<Instant>) -> Result<Vec<u8>, ReadError> {
        let mut body = Vec::new();
        loop {
            let line = self.read_line(started)?;
            let size_text = line.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size_text, 16).map_err(|_| {
                ReadError::Malformed(format!("the chunk size {size_text:?} is not hexadecimal"))
            })?;
            if size == 0 {
                // Trailers, if any, end with an empty line.
                while !self.read_line(started)?.is_empty() {}
                return Ok(body);
            }
            if body.len() + size > MAX_BODY {
                return Err(ReadError::Malformed(
                    "the request body is over the 64 MiB limit".to_owned(),
                ));
            }
            body.extend(self.read_exact(size, started)?);
            if !self.read_line(started)?.is_empty() {
                return Err(ReadError::Malformed(
                    "a chunk does not end with CRLF".to_owned(),
                ));
            }
        }
    }

    /// Reads what the socket has. Between requests (nothing buffered, nothing started) a raised
    /// stop flag ends the wait; once a request has begun it has [`REQUEST_PATIENCE`] to arrive.
    fn fill(&mut self, started: &mut Option<Instant>) -> Result<Filled, ReadError> {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => return Ok(Filled::Closed),
                Ok(n) => {
                    started.get_or_insert_with(Instant::now);
                    self.buffer.extend_from_slice(&chunk[..n]);
                    return Ok(Filled::More);
                }
                Err(err)
                    if matches!(
                        err.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    match started {
                        None if self.stop.load(Ordering::SeqCst) => return Ok(Filled::Idle),
                        Some(at) if at.elapsed() > REQUEST_PATIENCE => {
                            return Err(ReadError::Broken);
                        }
                        _ => {}
                    }
                }
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Err(ReadError::Broken),
            }
        }
    }
}

enum Filled {
    More,
    Closed,
    Idle,
}

fn head_of(parsed: &httparse::Request<'_, '_>) -> Result<Request, ReadError> {
    let method = parsed.method.unwrap_or("GET").to_owned();
    let target = parsed.path.unwrap_or("/").to_owned();
    let mut headers = Vec::with_capacity(parsed.headers.len());
    for header in parsed.headers.iter() {
        let value = std::str::from_utf8(header.value).map_err(|_| {
            ReadError::Malformed(format!("the header `{}` is not UTF-8", header.name))
        })?;
        headers.push((header.name.to_ascii_lowercase(), value.trim().to_owned()));
    }
    let connection = headers
        .iter()
        .find(|(n, _)| n == "connection")
        .map(|(_, v)| v.to_ascii_lowercase());
    let close = match parsed.version {
        Some(0) => connection.as_deref() != Some("keep-alive"),
        _ => connection.as_deref() == Some("close"),
    };
    Ok(Request {
        method,
        target,
        headers,
        body: Vec::new(),
        close,
    })
}

/// Writes a status line and headers. `length` `None` means a chunked body follows.
pub fn write_head(
    out: &mut impl Write,
    status: u16,
    headers: &[(String, String)],
    length: Option<usize>,
) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (name, value) in headers {
        head.push_str(name);
        head.push_str(": ");
        head.push_str(value);
        head.push_str("\r\n");
    }
    match length {
        Some(length) => head.push_str(&format!("content-length: {length}\r\n\r\n")),
        None => head.push_str("transfer-encoding: chunked\r\n\r\n"),
    }
    out.write_all(head.as_bytes())
}

/// A whole response with a body.
pub fn write_response(
    out: &mut impl Write,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
) -> io::Result<()> {
    let mut bytes = Vec::with_capacity(256 + body.len());
    write_head(&mut bytes, status, headers, Some(body.len()))?;
    bytes.extend_from_slice(body);
    out.write_all(&bytes)?;
    out.flush()
}

/// One chunk of a chunked body, sent at once. An empty slice sends nothing (it would end the body).
pub fn write_chunk(out: &mut impl Write, bytes: &[u8]) -> io::Result<()> {
    if bytes.is_empty() {
        return Ok(());
    }
    let mut framed = Vec::with_capacity(bytes.len() + 12);
    framed.extend_from_slice(format!("{:x}\r\n", bytes.len()).as_bytes());
    framed.extend_from_slice(bytes);
    framed.extend_from_slice(b"\r\n");
    out.write_all(&framed)?;
    out.flush()
}

/// Ends a chunked body.
pub fn end_chunks(out: &mut impl Write) -> io::Result<()> {
    out.write_all(b"0\r\n\r\n")?;
    out.flush()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;

    use super::*;

    fn serve(raw: &'static [u8]) -> Vec<Request> {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let client = std::thread::spawn(move || {
            let mut stream = TcpStream::connect(address).unwrap();
            stream.write_all(raw).unwrap();
            stream.shutdown(std::net::Shutdown::Write).unwrap();
            let mut rest = Vec::new();
            let _ = stream.read_to_end(&mut rest);
        });
        let (stream, _) = listener.accept().unwrap();
        let mut connection = Connection::new(stream, Arc::default()).unwrap();
        let mut requests = Vec::new();
        while let Ok(Some(request)) = connection.next_request() {
            requests.push(request);
        }
        drop(connection);
        client.join().unwrap();
        requests
    }

    #[test]
    fn pipelined_requests_with_length_and_chunked_bodies_read_whole() {
        let requests = serve(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 7\r\n\r\n{\"a\":1}\
POST /v1/messages?beta=true HTTP/1.1\r\nTransfer-Encoding: chunked\r\nX-Api-Key: k\r\n\r\n3\r\n{\"b\r\n4\r\n\":2}\r\n0\r\n\r\n",
        );
        assert_eq!(requests.len(), 2);
        assert_eq!(requests[0].body, b"{\"a\":1}");
        assert_eq!(requests[0].header("host"), Some("x"));
        assert_eq!(requests[1].path(), "/v1/messages");
        assert_eq!(requests[1].body, b"{\"b\":2}");
        assert_eq!(requests[1].header("x-api-key"), Some("k"));
    }

    #[test]
    fn chunks_are_framed_and_an_empty_one_is_not_sent() {
        let mut out = Vec::new();
        write_head(
            &mut out,
            200,
            &[("content-type".into(), "text/event-stream".into())],
            None,
        )
        .unwrap();
        write_chunk(&mut out, b"data: 1\n\n").unwrap();
        write_chunk(&mut out, b"").unwrap();
        end_chunks(&mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n9\r\ndata: 1\n\n\r\n0\r\n\r\n"
        );
    }
}
