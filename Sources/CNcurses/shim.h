#define NCURSES_WIDECHAR 1
#include <locale.h>
#include <wchar.h>
#include <ncursesw/curses.h>

// Macros and globals Swift does not import, as functions.
static inline WINDOW *starling_stdscr(void) { return stdscr; }
static inline int starling_lines(void) { return LINES; }
static inline int starling_cols(void) { return COLS; }
static inline int starling_color_pair(int n) { return (int)COLOR_PAIR(n); }
static inline int starling_bold(void) { return (int)A_BOLD; }
static inline int starling_reverse(void) { return (int)A_REVERSE; }
static inline int starling_dim(void) { return (int)A_DIM; }
