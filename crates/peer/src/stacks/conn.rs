//! A TCP connection with or without TLS (revision 1.3, `--tls off`): the grpc and tcp stacks run
//! over [`MaybeTls`], which is the TLS stream of crate::tls's configuration with `--tls on` and
//! the bare TCP stream with `--tls off`. One enum instead of a boxed stream keeps the calls static
//! (one branch per read or write).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// The client's connection of the grpc and tcp stacks.
pub type ClientConn = MaybeTls<tokio_rustls::client::TlsStream<TcpStream>>;
/// The server's connection of the grpc and tcp stacks.
pub type ServerConn = MaybeTls<tokio_rustls::server::TlsStream<TcpStream>>;

/// A connection over TCP: TLS (`T`) or plaintext.
#[derive(Debug)]
pub enum MaybeTls<T> {
    /// TLS over the TCP stream.
    Tls(T),
    /// The TCP stream itself (`--tls off`).
    Plain(TcpStream),
}

/// A stream that runs over one TCP socket, which the transport statistics read.
pub trait OverTcp {
    /// The TCP socket below.
    fn tcp(&self) -> &TcpStream;
}

impl OverTcp for tokio_rustls::client::TlsStream<TcpStream> {
    fn tcp(&self) -> &TcpStream {
        self.get_ref().0
    }
}

impl OverTcp for tokio_rustls::server::TlsStream<TcpStream> {
    fn tcp(&self) -> &TcpStream {
        self.get_ref().0
    }
}

impl<T: OverTcp> OverTcp for MaybeTls<T> {
    fn tcp(&self) -> &TcpStream {
        match self {
            MaybeTls::Tls(tls) => tls.tcp(),
            MaybeTls::Plain(tcp) => tcp,
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for MaybeTls<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            MaybeTls::Tls(tls) => Pin::new(tls).poll_read(cx, buf),
            MaybeTls::Plain(tcp) => Pin::new(tcp).poll_read(cx, buf),
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for MaybeTls<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            MaybeTls::Tls(tls) => Pin::new(tls).poll_write(cx, buf),
            MaybeTls::Plain(tcp) => Pin::new(tcp).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            MaybeTls::Tls(tls) => Pin::new(tls).poll_write_vectored(cx, bufs),
            MaybeTls::Plain(tcp) => Pin::new(tcp).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            MaybeTls::Tls(tls) => tls.is_write_vectored(),
            MaybeTls::Plain(tcp) => tcp.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            MaybeTls::Tls(tls) => Pin::new(tls).poll_flush(cx),
            MaybeTls::Plain(tcp) => Pin::new(tcp).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            MaybeTls::Tls(tls) => Pin::new(tls).poll_shutdown(cx),
            MaybeTls::Plain(tcp) => Pin::new(tcp).poll_shutdown(cx),
        }
    }
}
