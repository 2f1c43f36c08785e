from nodewright.cli import main

raise SystemExit(main())
