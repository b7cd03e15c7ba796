//! The gRPC server of a conformance fault (crate::fault): a hand-written routing service instead
//! of the generated one, because the generated unary and client-stream handlers can only answer
//! with exactly one message or a status, and `missing-message` and `extra-message` must send none
//! or two. Every method runs as tonic's streaming call, which all four are on the wire.
//!
//! It reads the whole request stream, checks it as the normal server does, and then sends what
//! [`crate::fault::plan`] says; a bidi call is answered request by request as each arrives
//! ([`crate::fault::bidi_request`]), so a lock-step (pingpong) client is never left waiting.
//! HTTP/2 trailers end a stream, so `early-status` cannot put a message after them: it leaves
//! the last message out (the status OK comes before it would have).

use super::framing::{method_path, shape_of_path};
use super::validate::RequestCheck;
use super::{CallTally, MAX_MESSAGE, ServerState};
use crate::fault::{Answer, Ending, ServerFault, Step, bidi_end, bidi_request, plan};
use futures::{Stream, StreamExt, stream};
use rpcarena_protocol::pb;
use rpcarena_protocol::workload::Shape;
use std::convert::Infallible;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tonic::server::{Grpc, NamedService, StreamingService};
use tonic::{Code, Request, Response, Status, Streaming};
use tonic_prost::ProstCodec;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
type Answers<M> = Pin<Box<dyn Stream<Item = Result<M, Status>> + Send>>;

/// Serves `BenchService` with `fault` on every call.
#[derive(Clone)]
pub struct FaultService {
    state: Arc<ServerState>,
    fault: ServerFault,
}

impl FaultService {
    /// The service of a server running `fault`.
    pub fn new(state: Arc<ServerState>, fault: ServerFault) -> FaultService {
        FaultService { state, fault }
    }
}

impl NamedService for FaultService {
    const NAME: &'static str = "rpcarena.bench.v1.BenchService";
}

impl<B> tower::Service<http::Request<B>> for FaultService
where
    B: tonic::codegen::Body + Send + 'static,
    B::Error: Into<tonic::codegen::StdError> + Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let path = request.uri().path();
        // Command (shape send) is a gRPC method only: the native framing has no one-way call.
        let shape = if path == method_path(Shape::Send) {
            Some(Shape::Send)
        } else {
            shape_of_path(path.as_bytes())
        };
        let (state, fault) = (self.state.clone(), self.fault);
        Box::pin(async move {
            Ok(match shape {
                Some(Shape::ClientStream) => {
                    grpc::<pb::Summary>()
                        .streaming(
                            FaultCall::<pb::Summary>::new(state, fault, Shape::ClientStream),
                            request,
                        )
                        .await
                }
                Some(Shape::Send) => {
                    grpc::<pb::Empty>()
                        .streaming(
                            FaultCall::<pb::Empty>::new(state, fault, Shape::Send),
                            request,
                        )
                        .await
                }
                Some(shape) => {
                    grpc::<pb::Response>()
                        .streaming(FaultCall::<pb::Response>::new(state, fault, shape), request)
                        .await
                }
                None => Status::unimplemented(format!("unknown method {}", request.uri().path()))
                    .into_http(),
            })
        })
    }
}

/// The server side of a call answering `M`, with the normal server's message limits.
fn grpc<M: prost::Message + Default + Send + 'static>() -> Grpc<ProstCodec<M, pb::Request>> {
    Grpc::new(ProstCodec::default())
        .apply_max_message_size_config(Some(MAX_MESSAGE), Some(MAX_MESSAGE))
}

/// One method of the fault service.
struct FaultCall<M> {
    state: Arc<ServerState>,
    fault: ServerFault,
    shape: Shape,
    answer: PhantomData<fn() -> M>,
}

impl<M> FaultCall<M> {
    fn new(state: Arc<ServerState>, fault: ServerFault, shape: Shape) -> FaultCall<M> {
        FaultCall {
            state,
            fault,
            shape,
            answer: PhantomData,
        }
    }
}

impl<M: Answer> StreamingService<pb::Request> for FaultCall<M> {
    type Response = M;
    type ResponseStream = Answers<M>;
    type Future = BoxFuture<Result<Response<Answers<M>>, Status>>;

    fn call(&mut self, request: Request<Streaming<pb::Request>>) -> Self::Future {
        Box::pin(answer::<M>(
            self.state.clone(),
            self.fault,
            self.shape,
            request.into_inner(),
        ))
    }
}

/// Reads and checks every request of the call, then answers as the fault's plan says (a bidi
/// call: as each request arrives).
async fn answer<M: Answer>(
    state: Arc<ServerState>,
    fault: ServerFault,
    shape: Shape,
    mut requests: Streaming<pb::Request>,
) -> Result<Response<Answers<M>>, Status> {
    if shape == Shape::Bidi {
        return Ok(Response::new(Box::pin(bidi_answers(
            state, fault, requests,
        ))));
    }
    let mut tally = CallTally::new(&state);
    let mut check = RequestCheck::new(shape);
    let mut received = Vec::new();
    let refuse = |message: String| {
        state.reject_with(&message);
        Status::invalid_argument(message)
    };
    while let Some(request) = requests.message().await? {
        tally.request();
        if fault.validates() {
            check.check(&request).map_err(refuse)?;
        }
        received.push(request);
    }
    if fault.validates() {
        check.finish().map_err(refuse)?;
    }
    if !shape.streams_requests() && received.len() != 1 {
        return Err(refuse(format!(
            "a {shape} call carries exactly one request, got {}",
            received.len()
        )));
    }
    if shape.is_one_way() {
        state.command();
    }
    let plan = plan::<M>(fault, shape, &received);
    let step = Step {
        messages: plan.messages,
        ending: Some(plan.ending),
    };
    Ok(Response::new(Box::pin(stream::iter(items(
        step, &mut tally,
    )))))
}

/// What a step puts on the response stream: its messages, then (when it ends the call) the
/// status, or nothing more for status OK (the stream's end). `early-status`'s last message is
/// left out: nothing can follow the trailers.
fn items<M>(step: Step<M>, tally: &mut CallTally) -> Vec<Result<M, Status>> {
    let mut messages = step.messages;
    let status = match step.ending {
        None | Some(Ending::Ok) => None,
        Some(Ending::OkBeforeLast) => {
            messages.pop();
            None
        }
        Some(Ending::Status(code, message)) => {
            tally.reject();
            Some(Status::new(Code::from_i32(code as i32), message))
        }
    };
    for _ in &messages {
        tally.response();
    }
    messages
        .into_iter()
        .map(Ok)
        .chain(status.map(Err))
        .collect()
}

/// A bidi call of a fault server: each request checked and answered as it arrives, with the
/// fault's steps; the stream ends after the step that ends the call.
fn bidi_answers<M: Answer>(
    state: Arc<ServerState>,
    fault: ServerFault,
    requests: Streaming<pb::Request>,
) -> impl Stream<Item = Result<M, Status>> + Send {
    struct Call {
        requests: Streaming<pb::Request>,
        check: RequestCheck,
        tally: CallTally,
        last: Option<pb::Request>,
        ended: bool,
    }
    let call = Call {
        requests,
        check: RequestCheck::new(Shape::Bidi),
        tally: CallTally::new(&state),
        last: None,
        ended: false,
    };
    let refuse = |tally: &CallTally, message: String| {
        tally.reject();
        vec![Err(Status::invalid_argument(message))]
    };
    stream::unfold(call, move |mut call| async move {
        if call.ended {
            return None;
        }
        call.ended = true;
        let answers = match call.requests.message().await {
            Err(status) => vec![Err(status)],
            Ok(Some(request)) => {
                call.tally.request();
                match call.check.check(&request) {
                    Err(message) if fault.validates() => refuse(&call.tally, message),
                    _ => {
                        let step = bidi_request::<M>(fault, &request);
                        call.ended = step.ending.is_some();
                        call.last = Some(request);
                        items(step, &mut call.tally)
                    }
                }
            }
            Ok(None) => match call.check.finish() {
                Err(message) if fault.validates() => refuse(&call.tally, message),
                _ => items(bidi_end::<M>(fault, call.last.as_ref()), &mut call.tally),
            },
        };
        Some((stream::iter(answers), call))
    })
    .flatten()
}
