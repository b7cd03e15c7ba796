//! Running `ip`, `tc` and `ethtool`. Shelling out to iproute2 keeps namespace and address
//! set-up readable and identical to what an engineer would type to reproduce it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::NetemError;

/// Where to look for system tools besides `PATH`: they live in sbin, which is often not on a
/// non-login `PATH`.
const EXTRA_DIRS: [&str; 4] = ["/usr/sbin", "/sbin", "/usr/bin", "/bin"];

/// Finds `tool` on `PATH` or in the sbin directories.
pub fn find_tool(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(EXTRA_DIRS.iter().map(PathBuf::from))
        .map(|dir| dir.join(tool))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Like [`find_tool`], with an error that says what the tool is for and where to get it.
pub fn require_tool(tool: &str, purpose: &str, package: &str) -> Result<PathBuf, NetemError> {
    find_tool(tool).ok_or_else(|| NetemError::MissingTool {
        tool: tool.to_string(),
        purpose: purpose.to_string(),
        package: package.to_string(),
    })
}

/// Runs `ip ARGS...`, returning stdout.
pub fn ip(args: &[&str]) -> Result<String, NetemError> {
    let tool = require_tool("ip", "to create namespaces and devices", "iproute2")?;
    run(&tool, args, None)
}

/// Runs `ip -n NS -batch -` with `commands` on stdin (one process for several steps).
pub fn ip_batch(namespace: &str, commands: &str) -> Result<String, NetemError> {
    let tool = require_tool("ip", "to create namespaces and devices", "iproute2")?;
    run(&tool, &["-n", namespace, "-batch", "-"], Some(commands))
}

/// Runs `tc ARGS...`, returning stdout.
pub fn tc(args: &[&str]) -> Result<String, NetemError> {
    let tool = require_tool("tc", "for kernel netem", "iproute2")?;
    run(&tool, args, None)
}

/// Runs a program, mapping failure to [`NetemError::Command`] with its stderr.
pub fn run(program: &Path, args: &[&str], stdin: Option<&str>) -> Result<String, NetemError> {
    let command_line = format!("{} {}", program.display(), args.join(" "));
    let mut command = Command::new(program);
    command
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
    let mut child = command.spawn().map_err(|e| NetemError::Command {
        command: command_line.clone(),
        status: "could not start".to_string(),
        stderr: e.to_string(),
    })?;
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A write error shows up as the command's own failure below.
        let _ = pipe.write_all(input.as_bytes());
    }
    let output = child.wait_with_output().map_err(|e| NetemError::Command {
        command: command_line.clone(),
        status: "could not wait for it".to_string(),
        stderr: e.to_string(),
    })?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(NetemError::Command {
            command: command_line,
            status: output.status.to_string(),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        })
    }
}
