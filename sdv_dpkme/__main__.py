import sys

from sdv_dpkme.cli import main

sys.exit(main())
