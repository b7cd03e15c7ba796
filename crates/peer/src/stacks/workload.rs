//! What every operation of a sample sends, and how a client checks and counts what came back:
//! written once for every stack, so that grpc, quic and tcp build identical requests and judge
//! responses identically (the checks themselves are `rpcarena_protocol::workload`'s).

use crate::engine::{OpError, OpOutcome};
use rpcarena_protocol::event::code;
use rpcarena_protocol::pb;
use rpcarena_protocol::workload::{
    Invalid, Payload, Shape, check_response, check_stream_summary, check_summary, payload_len,
    request,
};

/// What every operation of a sample does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workload {
    /// The RPC shape.
    pub shape: Shape,
    /// Payload bytes of each request.
    pub request_size: u32,
    /// Payload bytes of each response.
    pub response_size: u32,
    /// N, messages in each streamed direction.
    pub messages: u32,
    /// What the payloads are: zero bytes or structured messages.
    pub payload: Payload,
}

impl Workload {
    /// Request `seq`, asking for `response_messages` responses (a server stream's N, else 0).
    /// A command (shape `send`) asks for no response: `response_size` 0 whatever
    /// `--response-size` said.
    pub fn request(&self, seq: u64, response_messages: u32) -> pb::Request {
        let response_size = if self.shape.is_one_way() {
            0
        } else {
            self.response_size
        };
        request(
            self.payload,
            seq,
            self.request_size,
            response_size,
            response_messages,
        )
    }

    /// Checks response `seq` (payload kind and size); returns its payload bytes.
    pub fn checked_response(&self, response: &pb::Response, seq: u64) -> Result<u64, OpError> {
        check_response(response, self.payload, seq, self.response_size).map_err(invalid)?;
        Ok(payload_len(&response.payload, response.body.as_ref()))
    }

    /// Checks a client stream's summary of N requests; returns its payload bytes.
    pub fn checked_summary(&self, summary: &pb::Summary) -> Result<u64, OpError> {
        check_summary(
            summary,
            self.payload,
            self.messages,
            self.request_size,
            self.response_size,
        )
        .map_err(invalid)?;
        Ok(payload_len(&summary.payload, summary.body.as_ref()))
    }

    /// Checks a send-saturation stream's summary, which must confirm all `sent` messages;
    /// returns its payload bytes.
    pub fn checked_stream_summary(&self, summary: &pb::Summary, sent: u64) -> Result<u64, OpError> {
        check_stream_summary(
            summary,
            self.payload,
            sent,
            self.request_size,
            self.response_size,
        )
        .map_err(invalid)?;
        Ok(payload_len(&summary.payload, summary.body.as_ref()))
    }

    /// What an operation of `requests` request messages and `responses` response messages,
    /// carrying `response_bytes`, counts.
    pub fn outcome(&self, requests: u64, responses: u64, response_bytes: u64) -> OpOutcome {
        OpOutcome {
            requests,
            responses,
            request_bytes: requests * u64::from(self.request_size),
            response_bytes,
        }
    }
}

/// A response that fails its check: code `invalid`.
pub fn invalid(e: Invalid) -> OpError {
    OpError::new(code::INVALID, e.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_count_payload_bytes_and_refuse_what_differs() {
        let workload = Workload {
            shape: Shape::Unary,
            request_size: 10,
            response_size: 20,
            messages: 3,
            payload: Payload::Zeros,
        };
        let request = workload.request(7, 0);
        assert_eq!((request.seq, request.payload.len()), (7, 10));
        let response = rpcarena_protocol::workload::response_to(&request, 7);
        assert_eq!(workload.checked_response(&response, 7), Ok(20));
        let wrong = workload.checked_response(&response, 8).unwrap_err();
        assert_eq!(wrong.code, code::INVALID);
        assert_eq!(
            workload.outcome(3, 1, 5),
            OpOutcome {
                requests: 3,
                responses: 1,
                request_bytes: 30,
                response_bytes: 5,
            }
        );
    }
}
