//! `ctxlab plugins`.

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> ctxlab::Result<()> {
    Err(ctxlab::Error::Invalid("`ctxlab plugins` is being built".into()))
}
