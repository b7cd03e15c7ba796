//! The gRPC server of a conformance fault (crate::fault): a hand-written routing service instead
//! of the generated one, because the generated unary and client-stream handlers can only answer
//! with exactly one message or a status, and `missing-message` and `extra-message` must send none
//! or two. Every method runs as tonic's streaming call, which all four are on the wire.
//!
//! It reads the whole request stream, checks it as the normal server does, and then sends what
//! [`crate::fault::plan`] says. HTTP/2 trailers end a stream, so `early-status` cannot put a
//! message after them: it leaves the last message out (the status OK comes before it would have).

use super::framing::shape_of_path;
use super::validate::RequestCheck;
use super::{CallTally, MAX_MESSAGE, ServerState};
use crate::fault::{Answer, Ending, ServerFault, plan};
use futures::{Stream, stream};
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
        let shape = shape_of_path(request.uri().path().as_bytes());
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

/// Reads and checks every request of the call, then answers as the fault's plan says.
async fn answer<M: Answer>(
    state: Arc<ServerState>,
    fault: ServerFault,
    shape: Shape,
    mut requests: Streaming<pb::Request>,
) -> Result<Response<Answers<M>>, Status> {
    let mut tally = CallTally::new(&state);
    let mut check = RequestCheck::new(shape);
    let mut received = Vec::new();
    let refuse = |message: String| {
        state.reject();
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
    let plan = plan::<M>(fault, shape, &received);
    let mut messages = plan.messages;
    let status = match plan.ending {
        Ending::Ok => None,
        Ending::OkBeforeLast => {
            messages.pop();
            None
        }
        Ending::Status(code, message) => {
            state.reject();
            Some(Status::new(Code::from_i32(code as i32), message))
        }
    };
    for _ in &messages {
        tally.response();
    }
    let answers = messages.into_iter().map(Ok).chain(status.map(Err));
    Ok(Response::new(Box::pin(stream::iter(answers))))
}
