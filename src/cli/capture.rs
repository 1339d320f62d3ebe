//! `ctxlab capture`: the recording proxy (`ctxlab::capture`), run until interrupted.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use ctxlab::capture::{self, Options};

#[derive(clap::Args)]
pub struct Args {
    /// Folder of the capture files, one `<conversation>.jsonl` per agent conversation.
    #[arg(short, long, value_name = "DIR")]
    out: PathBuf,
    /// Address to listen on (port 0: any free port, printed at start).
    #[arg(long, default_value = "127.0.0.1:8787", value_name = "ADDR:PORT")]
    listen: SocketAddr,
    /// Send every request to this base URL instead of the provider its path names (a gateway,
    /// a self-hosted or compatible endpoint).
    #[arg(long, value_name = "URL")]
    upstream: Option<String>,
    /// Accept a listen address other than loopback (the proxy sees every prompt).
    #[arg(long)]
    allow_remote: bool,
    /// Stop after this many exchanges are recorded (default: run until interrupted).
    #[arg(long, value_name = "N")]
    exit_after: Option<u64>,
}

pub fn run(args: Args) -> ctxlab::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| ctxlab::Error::Invalid(format!("capture: cannot start: {e}")))?;
    rt.block_on(async move {
        let proxy = capture::start(Options {
            listen: args.listen,
            upstream: args.upstream.clone(),
            out_dir: args.out.clone(),
            allow_remote: args.allow_remote,
        })
        .await?;
        println!("listening on http://{}", proxy.addr);
        println!("recording to {}", args.out.display());
        println!("point your agent at it:");
        for (tool, line) in capture::setup_lines(proxy.addr) {
            println!("  {tool:<24} {line}");
        }
        let stats = proxy.stats.clone();
        let mut shown = 0;
        loop {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => break,
                _ = tokio::time::sleep(Duration::from_millis(200)) => {}
            }
            let n = stats.recorded.load(Ordering::Relaxed);
            if n != shown {
                shown = n;
                eprintln!(
                    "recorded {n} exchange(s), {} failed",
                    stats.failed.load(Ordering::Relaxed)
                );
            }
            if args.exit_after.is_some_and(|m| n >= m) {
                break;
            }
        }
        proxy.shutdown().await;
        println!(
            "stopped: {} recorded in {}",
            stats.recorded.load(Ordering::Relaxed),
            args.out.display()
        );
        Ok(())
    })
}
