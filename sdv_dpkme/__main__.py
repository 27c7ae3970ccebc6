from sdv_dpkme.cli import main

main()
