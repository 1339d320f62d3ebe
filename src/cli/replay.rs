//! `ctxlab replay`.

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> ctxlab::Result<()> {
    Err(ctxlab::Error::Invalid("`ctxlab replay` is being built".into()))
}
