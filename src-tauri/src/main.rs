// No console window beside the app on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    ctxlab_app::startup::begin();
    ctxlab_app::run();
}
