//! Who the kit pairs the peer under test with, per stack, group and role
//! (docs/peer-protocol.md, "Conformance"). Pure: capabilities in, a choice (or the reason there
//! is none) out; `lib` queries the capabilities and `kit` and `samples` start the processes.

use rpcarena_protocol::event::{Capabilities, Role, StackCapability};

/// A peer the kit can start: the peer under test, or a candidate partner.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Its id (`rust`, a folder of peers/ such as `go`), shown in the rows' names.
    pub id: String,
    /// Its command (resolved).
    pub command: Vec<String>,
    /// Its capabilities, queried once.
    pub caps: Capabilities,
}

/// What a group needs of its partner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Any peer that offers the stack in the partner's role (sample, lifecycle, tls).
    Offers,
    /// One whose stack entry declares conformance faults (the validation groups).
    Faults,
    /// One whose stack entry takes `--tls off` (the plaintext rows of the tls group, 1.3).
    Plaintext,
}

/// The role opposite `role`: the partner's.
pub fn opposite(role: Role) -> Role {
    match role {
        Role::Client => Role::Server,
        Role::Server => Role::Client,
    }
}

/// The role's name in rows and reasons.
pub fn role_name(role: Role) -> &'static str {
    match role {
        Role::Client => "client",
        Role::Server => "server",
    }
}

/// Whether this stack entry declares docs/stacks.md's conformance faults (revision 1.2,
/// `conformance_faults`; absent means `false`).
pub fn declares_faults(entry: &StackCapability) -> bool {
    entry.conformance_faults
}

/// The entry `candidate` offers in `role` for `stack` that meets `need`.
fn offers<'a>(
    candidate: &'a Candidate,
    role: Role,
    stack: &str,
    need: Need,
) -> Option<&'a StackCapability> {
    candidate
        .caps
        .roles
        .stack(role, stack)
        .filter(|entry| match need {
            Need::Offers => true,
            Need::Faults => declares_faults(entry),
            Need::Plaintext => entry.takes_tls(false),
        })
}

/// The order of preference: the first candidate (the Rust peer, the reference), then the peer
/// itself, then the other candidates in their order.
fn preference<'a>(peer: &'a Candidate, candidates: &'a [Candidate]) -> Vec<&'a Candidate> {
    let (first, rest) = match candidates.split_first() {
        Some((first, rest)) => (Some(first), rest),
        None => (None, candidates),
    };
    first
        .into_iter()
        .chain(std::iter::once(peer))
        .chain(rest)
        .collect()
}

/// The partner playing `partner_role` on `stack` for `peer`: the first of [`preference`] that
/// offers it (with faults when `need` says so), or the reason there is none, naming who was
/// asked ("no server of tcp with conformance faults among rust, the peer itself (go)").
pub fn choose<'a>(
    peer: &'a Candidate,
    candidates: &'a [Candidate],
    partner_role: Role,
    stack: &str,
    need: Need,
) -> Result<&'a Candidate, String> {
    let order = preference(peer, candidates);
    if let Some(found) = order
        .iter()
        .find(|c| offers(c, partner_role, stack, need).is_some())
    {
        return Ok(found);
    }
    let asked: Vec<String> = order
        .iter()
        .map(|c| {
            if std::ptr::eq(*c, peer) {
                format!("the peer itself ({})", c.id)
            } else {
                c.id.clone()
            }
        })
        .collect();
    Err(format!(
        "no {} of {stack}{} among {}",
        role_name(partner_role),
        match need {
            Need::Offers => "",
            Need::Faults => " with conformance faults",
            Need::Plaintext => " that takes --tls off",
        },
        asked.join(", ")
    ))
}

/// The partner's entry for `stack` in `role` (it was chosen because it has one).
pub fn entry<'a>(partner: &'a Candidate, role: Role, stack: &str) -> Option<&'a StackCapability> {
    partner.caps.roles.stack(role, stack)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcarena_protocol::event::Roles;

    /// An entry for `stack`; a trailing `!` declares conformance faults (`tcp!`).
    fn entry(stack: &str) -> StackCapability {
        StackCapability {
            stack: stack.trim_end_matches('!').into(),
            conformance_faults: stack.ends_with('!'),
            shapes: vec!["unary".into()],
            ..StackCapability::default()
        }
    }

    /// A candidate named `id` (peer name `peer`) serving `servers` and driving `clients`.
    fn candidate(id: &str, peer: &str, clients: &[&str], servers: &[&str]) -> Candidate {
        Candidate {
            id: id.into(),
            command: vec![format!("/bin/{id}")],
            caps: Capabilities {
                peer: peer.into(),
                roles: Roles {
                    client: clients.iter().map(|s| entry(s)).collect(),
                    server: servers.iter().map(|s| entry(s)).collect(),
                },
                ..Capabilities::default()
            },
        }
    }

    fn rust() -> Candidate {
        candidate(
            "rust",
            "rpcarena-peer-rust",
            &["grpc!", "quic!", "tcp!"],
            &["grpc!", "quic!", "tcp!"],
        )
    }

    fn go() -> Candidate {
        candidate(
            "go",
            "rpcarena-peer-go",
            &["grpc", "tcp", "netrpc-gob"],
            &["grpc", "netrpc-gob", "http1-proto"],
        )
    }

    fn chosen(
        peer: &Candidate,
        candidates: &[Candidate],
        role: Role,
        stack: &str,
        need: Need,
    ) -> Result<String, String> {
        choose(peer, candidates, role, stack, need).map(|c| c.id.clone())
    }

    #[test]
    fn the_rust_peer_comes_first_then_the_peer_itself_then_the_others() {
        let kotlin = candidate("kotlin", "rpcarena-peer-kotlin", &["netrpc-gob"], &[]);
        let candidates = [rust(), kotlin.clone()];
        let go = go();
        // Rust serves grpc: it is the partner, even though go serves grpc too
        assert_eq!(
            chosen(&go, &candidates, Role::Server, "grpc", Need::Offers),
            Ok("rust".into())
        );
        // nobody but go serves netrpc-gob: go itself
        assert_eq!(
            chosen(&go, &candidates, Role::Server, "netrpc-gob", Need::Offers),
            Ok("go".into())
        );
        // a client of netrpc-gob: Rust has none, go has one itself, before kotlin
        assert_eq!(
            chosen(&go, &candidates, Role::Client, "netrpc-gob", Need::Offers),
            Ok("go".into())
        );
        // go drives no http1-proto client: kotlin does not either
        let err = chosen(&go, &candidates, Role::Client, "http1-proto", Need::Offers).unwrap_err();
        assert_eq!(
            err,
            "no client of http1-proto among rust, the peer itself (go), kotlin"
        );
        // a server-only stack of the peer is served by someone else when it has no server
        let only_client = candidate("js", "rpcarena-peer-js", &["netrpc-gob"], &[]);
        let candidates = [rust(), go.clone()];
        assert_eq!(
            chosen(
                &only_client,
                &candidates,
                Role::Server,
                "netrpc-gob",
                Need::Offers
            ),
            Ok("go".into())
        );
    }

    #[test]
    fn the_validation_groups_need_a_partner_with_faults() {
        let go = go();
        let candidates = [rust()];
        // Rust's tcp declares faults: it comes first
        assert_eq!(
            chosen(&go, &candidates, Role::Client, "tcp", Need::Faults),
            Ok("rust".into())
        );
        // go's netrpc-gob server has none: not checked, naming who was asked
        let err = chosen(&go, &candidates, Role::Server, "netrpc-gob", Need::Faults).unwrap_err();
        assert_eq!(
            err,
            "no server of netrpc-gob with conformance faults among rust, the peer itself (go)"
        );
        // once go declares them, go is its own misbehaving partner
        let faulty_go = candidate("go", "rpcarena-peer-go", &["netrpc-gob!"], &["netrpc-gob!"]);
        assert_eq!(
            chosen(
                &faulty_go,
                &candidates,
                Role::Server,
                "netrpc-gob",
                Need::Faults
            ),
            Ok("go".into())
        );
        // another peer with faults is taken when neither Rust nor the peer has them
        let kotlin = candidate("kotlin", "rpcarena-peer-kotlin", &["netrpc-gob!"], &[]);
        let candidates = [rust(), kotlin];
        assert_eq!(
            chosen(&go, &candidates, Role::Client, "netrpc-gob", Need::Faults),
            Ok("kotlin".into())
        );
        // a partner that offers the stack without faults is enough for the other groups
        let plain = candidate("plain", "rpcarena-peer-plain", &[], &["grpc"]);
        let js = candidate("js", "rpcarena-peer-js", &["grpc"], &[]);
        let candidates = [plain];
        assert_eq!(
            chosen(&js, &candidates, Role::Server, "grpc", Need::Offers),
            Ok("plain".into())
        );
        assert!(chosen(&js, &candidates, Role::Server, "grpc", Need::Faults).is_err());
        // no candidates at all: only the peer itself is asked
        assert_eq!(
            chosen(&go, &[], Role::Server, "quic", Need::Offers).unwrap_err(),
            "no server of quic among the peer itself (go)"
        );
    }
}
