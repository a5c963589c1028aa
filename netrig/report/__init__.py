"""Reports on stored experiments: plots (`plots`), the HTML report (`html`), and the texts
they share (`units` for readable numbers, `verdicts` for comparisons)."""
