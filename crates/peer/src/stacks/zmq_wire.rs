//! The zmq stack's messages (docs/stacks.md, "zmq"), sans IO: the hello, the operation id frame,
//! parsing a message into its id and protobuf body, and describing a message that does not parse
//! (frame sizes and the first 16 bytes in hex) for `first_rejection` and the client's `invalid`.

use prost::Message;
use rpcarena_protocol::pb;

/// The one-frame message of the hello, and the first frame of the server's answer to it.
pub const HELLO: &[u8] = b"HELLO";
/// `ZMQ_ROUTING_ID` of the server's request endpoint.
pub const REQUEST_ID: &[u8] = b"rpcarena-request";
/// `ZMQ_ROUTING_ID` of the server's command endpoint.
pub const COMMAND_ID: &[u8] = b"rpcarena-command";

/// The two endpoints of a zmq server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// Requests with a reply (shape `unary`).
    Request,
    /// One-way commands (shape `send`).
    Command,
}

impl Endpoint {
    /// The endpoint's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Endpoint::Request => "request",
            Endpoint::Command => "command",
        }
    }
}

/// The 8-byte frame of operation id `id` (unsigned big-endian).
pub fn id_frame(id: u64) -> [u8; 8] {
    id.to_be_bytes()
}

/// A message that does not parse: what is wrong, and the id when it was readable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    /// The operation id, when the id frame was 8 bytes.
    pub id: Option<[u8; 8]>,
    /// One line: what was wrong, the frame sizes and the first 16 bytes in hex.
    pub description: String,
}

/// The frame sizes and first 16 bytes (over every frame, in order) of `frames`:
/// "2 frames of 8, 3 bytes: 00 00 00 00 00 00 00 01 08 01 10".
pub fn describe(frames: &[Vec<u8>]) -> String {
    let sizes: Vec<String> = frames.iter().map(|f| f.len().to_string()).collect();
    let hex: Vec<String> = frames
        .iter()
        .flatten()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect();
    let noun = if frames.len() == 1 { "frame" } else { "frames" };
    format!(
        "{} {noun} of {} bytes: {}",
        frames.len(),
        sizes.join(", "),
        if hex.is_empty() {
            "(empty)".to_string()
        } else {
            hex.join(" ")
        }
    )
}

/// Parses `[id][Request]` (the frames after the routing id) received on `endpoint`.
pub fn parse_request(
    endpoint: Endpoint,
    frames: &[Vec<u8>],
) -> Result<([u8; 8], pb::Request), Malformed> {
    let fail = |id: Option<[u8; 8]>, what: String| Malformed {
        id,
        description: format!(
            "{what} on the {} endpoint: {}",
            endpoint.name(),
            describe(frames)
        ),
    };
    let id: Option<[u8; 8]> = frames.first().and_then(|f| f.as_slice().try_into().ok());
    if frames.len() != 2 {
        return Err(fail(
            id,
            format!(
                "a message of {} frames, expected 2 ([id][Request])",
                frames.len()
            ),
        ));
    }
    let Some(id) = id else {
        return Err(fail(
            None,
            format!("an id frame of {} bytes, expected 8", frames[0].len()),
        ));
    };
    let request = pb::Request::decode(frames[1].as_slice())
        .map_err(|e| fail(Some(id), format!("a Request that does not decode ({e})")))?;
    Ok((id, request))
}

/// The server's reply frames `[id][Status][Response...]` to request `id` (`responses` empty:
/// an empty third frame, as a non-OK status has).
pub fn reply(id: [u8; 8], status: &pb::Status, responses: &[pb::Response]) -> Vec<Vec<u8>> {
    let mut frames = vec![id.to_vec(), status.encode_to_vec()];
    if responses.is_empty() {
        frames.push(Vec::new());
    }
    frames.extend(responses.iter().map(Message::encode_to_vec));
    frames
}

/// A reply as the client reads it: the id, the status and the response frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// The operation id.
    pub id: u64,
    /// The status (code 0: OK).
    pub status: pb::Status,
    /// The response (empty when the third frame is).
    pub response: pb::Response,
}

/// Parses a reply `[id][Status][Response]` (the frames after the server's routing id); the error
/// is the `invalid` message.
pub fn parse_reply(frames: &[Vec<u8>]) -> Result<Reply, String> {
    let fail = |what: String| format!("{what} from the request endpoint: {}", describe(frames));
    if frames.len() != 3 {
        return Err(fail(format!(
            "a reply of {} frames, expected 3",
            frames.len()
        )));
    }
    let id: [u8; 8] = frames[0]
        .as_slice()
        .try_into()
        .map_err(|_| fail(format!("an id frame of {} bytes", frames[0].len())))?;
    let status = pb::Status::decode(frames[1].as_slice())
        .map_err(|e| fail(format!("a Status that does not decode ({e})")))?;
    let response = pb::Response::decode(frames[2].as_slice())
        .map_err(|e| fail(format!("a Response that does not decode ({e})")))?;
    Ok(Reply {
        id: u64::from_be_bytes(id),
        status,
        response,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcarena_protocol::workload::{Payload, request, response_to};

    #[test]
    fn the_example_of_docs_stacks_md_round_trips() {
        let unary = request(Payload::Zeros, 1, 0, 0, 0);
        let frames = vec![id_frame(1).to_vec(), unary.encode_to_vec()];
        assert_eq!(frames[1], vec![0x08, 0x01]);
        let (id, parsed) = parse_request(Endpoint::Request, &frames).expect("parses");
        assert_eq!((id, &parsed), (id_frame(1), &unary));
        let answer = reply(id, &pb::Status::default(), &[response_to(&parsed, 1)]);
        assert_eq!(answer, vec![id_frame(1).to_vec(), vec![], vec![0x08, 0x01]]);
        let read = parse_reply(&answer).expect("a reply parses");
        assert_eq!((read.id, read.status.code, read.response.seq), (1, 0, 1));
    }

    #[test]
    fn bad_frames_are_described_with_sizes_and_bytes() {
        let one = vec![b"HELLO!!".to_vec()];
        let error = parse_request(Endpoint::Command, &one).unwrap_err();
        assert_eq!(error.id, None);
        assert_eq!(
            error.description,
            "a message of 1 frames, expected 2 ([id][Request]) on the command endpoint: \
             1 frame of 7 bytes: 48 45 4c 4c 4f 21 21"
        );
        let short_id = vec![vec![1, 2, 3], vec![8, 1]];
        let error = parse_request(Endpoint::Request, &short_id).unwrap_err();
        assert!(
            error.description.starts_with("an id frame of 3 bytes"),
            "{error:?}"
        );
        assert!(
            error
                .description
                .ends_with("2 frames of 3, 2 bytes: 01 02 03 08 01")
        );
        let garbage = vec![id_frame(7).to_vec(), vec![0xff; 20]];
        let error = parse_request(Endpoint::Request, &garbage).unwrap_err();
        assert_eq!(error.id, Some(id_frame(7)));
        assert!(error.description.contains("does not decode"), "{error:?}");
        // only the first 16 bytes are shown
        assert!(
            error
                .description
                .ends_with("00 00 00 00 00 00 00 07 ff ff ff ff ff ff ff ff"),
            "{error:?}"
        );
        let four = reply(
            id_frame(2),
            &pb::Status::default(),
            &vec![pb::Response::default(); 2],
        );
        assert!(
            parse_reply(&four)
                .unwrap_err()
                .starts_with("a reply of 4 frames")
        );
        assert!(parse_reply(&[vec![1], vec![], vec![]]).is_err());
    }

    #[test]
    fn a_refusal_has_an_empty_third_frame() {
        let status = pb::Status {
            code: 3,
            message: "request 0: payload byte 3 is 0x01, expected zero".to_string(),
        };
        let frames = reply(id_frame(9), &status, &[]);
        assert_eq!(frames.len(), 3);
        assert!(frames[2].is_empty());
        let read = parse_reply(&frames).expect("parses");
        assert_eq!(read.status, status);
    }
}
