//! The terminal while the view is open: raw mode, the alternate screen, no
//! cursor; and put back as it was on quit, on an error, on a panic (a panic
//! hook) and on SIGTERM or SIGHUP (noted, then the loop ends).

use std::io::stdout;

use crossterm::cursor;
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

use super::backend::Quiet;

/// The terminal, taken over; dropping it puts the terminal back.
pub(crate) struct Screen {
    pub term: Terminal<Quiet>,
}

impl Screen {
    /// Takes the terminal over.
    pub(crate) fn enter() -> std::io::Result<Screen> {
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            leave();
            hook(info);
        }));
        crate::sys::note_termination();
        crate::sys::exit_on_hangup();
        enable_raw_mode()?;
        let term =
            Terminal::new(Quiet(CrosstermBackend::new(stdout()))).inspect_err(|_| leave())?;
        // From here on a failure puts the terminal back (drop).
        let mut screen = Screen { term };
        execute!(
            screen.term.backend_mut().0,
            EnterAlternateScreen,
            cursor::Hide
        )?;
        screen.term.clear()?;
        Ok(screen)
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        leave();
    }
}

/// Puts the terminal back (twice does no harm).
fn leave() {
    let _ = disable_raw_mode();
    let _ = execute!(stdout(), LeaveAlternateScreen, cursor::Show);
}
