//! How a peer process is started for one role: on this host, in the controller's network
//! namespace or in one of the run's, pinned to its CPUs. The argument vector it gives is spawned
//! as a process-group leader (`process`), so everything it starts is killed with it.
//!
//! This is the seam for peers elsewhere: a launcher that runs a peer over ssh or kubectl only
//! has to give the argument vector that starts it there and carries its stdin and stdout.

/// Where and how one role's peer runs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Launcher {
    /// A process on this host, in the controller's network namespace.
    Local {
        /// CPUs to pin it to (empty: not pinned).
        cpus: Vec<usize>,
    },
    /// A process on this host inside a network namespace of the run.
    Namespace {
        /// The argument vector that runs a command in the namespace (`ip netns exec NAME`).
        exec_prefix: Vec<String>,
        /// CPUs to pin it to (empty: not pinned).
        cpus: Vec<usize>,
    },
}

impl Launcher {
    /// The same launcher, pinned to `cpus`.
    pub(crate) fn with_cpus(&self, cpus: &[usize]) -> Launcher {
        match self {
            Launcher::Local { .. } => Launcher::Local {
                cpus: cpus.to_vec(),
            },
            Launcher::Namespace { exec_prefix, .. } => Launcher::Namespace {
                exec_prefix: exec_prefix.clone(),
                cpus: cpus.to_vec(),
            },
        }
    }

    /// The argument vector that starts `command` (the peer's, resolved) with `args` appended.
    pub(crate) fn argv(&self, command: &[String], args: Vec<String>) -> Vec<String> {
        let (prefix, cpus): (&[String], &[usize]) = match self {
            Launcher::Local { cpus } => (&[], cpus),
            Launcher::Namespace { exec_prefix, cpus } => (exec_prefix, cpus),
        };
        let mut argv = prefix.to_vec();
        argv.extend(taskset_prefix(cpus));
        argv.extend(command.iter().cloned());
        argv.extend(args);
        argv
    }
}

/// The argument-vector prefix that pins a command to `cpus` (`taskset -c 1,2`), if any.
fn taskset_prefix(cpus: &[usize]) -> Vec<String> {
    if cpus.is_empty() {
        return Vec::new();
    }
    let list: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
    vec!["taskset".into(), "-c".into(), list.join(",")]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_come_before_the_peer_command_and_its_arguments() {
        let command = vec!["/bin/peer".to_string(), "--flag".to_string()];
        let local = Launcher::Local { cpus: vec![] };
        assert_eq!(
            local.argv(&command, vec!["server".into()]),
            ["/bin/peer", "--flag", "server"]
        );
        let netns = Launcher::Namespace {
            exec_prefix: vec!["ip".into(), "netns".into(), "exec".into(), "ns".into()],
            cpus: vec![2, 3],
        };
        assert_eq!(
            netns.argv(&command, vec!["client".into()]).join(" "),
            "ip netns exec ns taskset -c 2,3 /bin/peer --flag client"
        );
    }
}
