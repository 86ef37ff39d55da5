"""Names for ``bench/matching/traffic.py``: the communities a Victorian, NSW and
Queensland rider-training business serves, and how their members shorten their names.

Written for this generator (not shared with the matcher's own tables in
``ridercrm.matching``): the short forms are those the author has seen people of each
community go by on booking forms, so the benchmark measures the matcher's tables
rather than repeating them. Names are as people type them (ASCII; the matcher folds
case and accents anyway).
"""

from __future__ import annotations

# community: (share of the store, male given names, female given names, family names)
COMMUNITIES: dict[str, tuple[float, str, str, str]] = {
    "anglo": (
        0.46,
        "William Liam James Jack Thomas Oliver Noah Lachlan Matthew Daniel Benjamin"
        " Christopher Michael Andrew David Joshua Samuel Alexander Nicholas Jonathan Ethan"
        " Nathan Riley Cooper Mitchell Bradley Luke Jake Harrison Patrick Timothy Robert"
        " Stephen Peter Richard Anthony Kevin Brendan Shane Jason Dylan Tom Ben Max Sam Kai",
        "Emily Olivia Charlotte Chloe Sophie Jessica Sarah Emma Hannah Grace Isabella"
        " Elizabeth Katherine Rebecca Madeleine Mia Zoe Amy Kate Ella Ruby Lily Georgia"
        " Abigail Victoria Alexandra Samantha Jennifer Michelle Natalie Stephanie Kimberley"
        " Tayla Brooke Jasmine Amelia Matilda Eliza Evie Ava Isla",
        "Smith Jones Williams Brown Wilson Taylor Johnson White Martin Anderson Thompson"
        " Walker Harris Ryan Kelly O'Brien Murphy Campbell Mitchell Robinson King Wright"
        " Clarke Hughes Edwards Lee Young Scott Green Baker Hall Turner Hill Cooper Ward"
        " Morris Stewart Bell Murray Watson Cook Bennett Evans Collins McDonald Fraser"
        " Sullivan Doyle Gallagher Fitzgerald",
    ),
    "vietnamese": (
        0.09,
        "Minh Binh Hung Tuan Duc Nam Quang Khoa Huy Long Thanh Hai Phuc Dung Vinh Bao Tri"
        " Hieu Khanh Son Viet Trung Cuong Dat Thang",
        "Linh Huong Trang Lan Mai Phuong Thao Ngoc Hoa Anh Thu Hanh Nhung Yen Vy Quynh"
        " Tram Diep Hien Uyen Oanh Loan Nga",
        "Nguyen Nguyen Nguyen Tran Tran Le Pham Hoang Vo Dang Bui Do Ngo Huynh Duong Ly"
        " Truong Phan Vu Dinh Lam Mai Ta",
    ),
    "chinese": (
        0.10,
        "Wei Jie Hao Jun Kai Ming Xiaoming Yu Tao Qiang Lei Bo Chen Feng Gang Hong Jian"
        " Peng Zhiwei Yifan Zihan Haoran Kevin Jason Eric Vincent",
        "Hui Ling Mei Xin Yan Jing Fang Li Na Qing Xiu Yun Ying Xiaoli Jiayi Yuxuan Shu"
        " Lan Min Jenny Vivian Cindy Grace Winnie",
        "Wang Li Zhang Chen Liu Yang Huang Zhao Wu Zhou Lin Chan Wong Lee Ng Cheung Ho Lau"
        " Tang Xu Sun Ma Zhu Hu Guo Leung Yip Tan",
    ),
    "indian": (
        0.10,
        "Rajesh Amit Siddharth Sukhdeep Gurpreet Harpreet Manpreet Jaspreet Navjot Arjun"
        " Rahul Vikram Sandeep Harjinder Kuldeep Pradeep Venkatesh Srinivas Suresh Ravi"
        " Anil Abhishek Karan Rohit Aditya Mohammad Imran",
        "Priyanka Priya Deepika Anjali Simran Kavita Sunita Lakshmi Navneet Harpreet"
        " Manpreet Jaspreet Gurleen Pooja Neha Shreya Divya Aishwarya Ananya Ramandeep"
        " Kiran Meera Swati",
        "Singh Singh Singh Kaur Kaur Sharma Patel Patel Kumar Gill Sandhu Sidhu Grewal"
        " Dhillon Reddy Gupta Verma Chopra Malhotra Bhatia Rao Iyer Nair Brar Bains Joshi",
    ),
    "greek": (
        0.07,
        "Nikolaos Konstantinos Dimitrios Georgios Panagiotis Ioannis Vasilios Christos"
        " Athanasios Emmanouil Spyridon Evangelos Theodoros Anastasios Stavros",
        "Maria Eleni Katerina Sophia Despina Anastasia Georgia Vasiliki Angeliki Dimitra"
        " Paraskevi Stavroula Chrysoula Evangelia Theodora",
        "Papadopoulos Georgiou Nikolaidis Karagiannis Dimitriou Vlahos Pappas Kostopoulos"
        " Antoniou Christodoulou Stavrou Konstantinidis Ioannou Papas Alexiou Makris"
        " Panagiotopoulos Economou",
    ),
    "italian": (
        0.08,
        "Giuseppe Giovanni Salvatore Francesco Vincenzo Antonio Marco Luca Domenico"
        " Alessandro Roberto Massimo Stefano Carmelo Rocco Angelo Pasquale",
        "Rosa Giulia Francesca Angela Maria Antonella Carmela Giuseppina Alessandra"
        " Teresa Concetta Lucia Elisabetta Rosaria Gabriella Serena",
        "Rossi Russo Romano Colombo Ferrari Esposito Bianchi Ricci Marino Greco Bruno"
        " Costa Gallo Conti De Luca Mancini Lombardi Moretti Barbaro Caruso Santoro"
        " Di Stefano Lo Presti",
    ),
    "lebanese": (
        0.05,
        "Mohammad Mohamed Ahmad Ali Khaled Hassan Omar Joseph Elias Youssef Ibrahim"
        " Mahmoud Bilal Tony Charbel Georges Fadi Rami Ziad Walid",
        "Fatima Layla Rania Nadia Mariam Zeinab Rita Nour Hiba Lina Rasha Maya Jana Yasmine"
        " Joelle Carla Dalia",
        "Khoury Haddad Nasser Saleh Fahd Hamoud Harb Issa Rahme Abboud Semaan Karam Younes"
        " Chahine El-Khoury Abdallah Mansour Jaber Sleiman",
    ),
    "filipino": (
        0.05,
        "Jose Mark Christian John Paul Rodel Jericho Rommel Ariel Noel Jun Renato"
        " Marvin Jonel Reynaldo Ramon Edgardo Carlo Angelo Jayson",
        "Angelica Princess Joy Mary Grace Maria Cristina Rowena Marites Lorna Jocelyn"
        " Jennilyn Mae Kristine Maricel Divina Arlene Lovely Charmaine Rhea",
        "Santos Reyes Cruz Bautista Ocampo Garcia Mendoza Torres Villanueva Dela Cruz"
        " Ramos Aquino Castillo Gonzales Flores Mercado Navarro De Guzman Pascual",
    ),
}

# Filipino compound given names ("John Paul", "Mary Grace") come as one name.
COMPOUND_GIVEN = ("John Paul", "Mary Grace", "Maria Cristina", "Mark Anthony", "Mary Joy")
# Two-part surnames typed as one name.
COMPOUND_FAMILY = ("De Luca", "Di Stefano", "Lo Presti", "Dela Cruz", "De Guzman")

# How people of each community write a shorter (or the formal) form of their name on a
# booking. Formal -> the forms seen.
SHORT_FORMS: dict[str, tuple[str, ...]] = {
    # anglo
    "William": ("Will", "Bill", "Liam", "Billy", "Willy"),
    "James": ("Jim", "Jimmy", "Jamie"),
    "Thomas": ("Tom", "Tommy"),
    "Oliver": ("Ollie",),
    "Lachlan": ("Lachie", "Lockie"),
    "Matthew": ("Matt", "Matty"),
    "Daniel": ("Dan", "Danny"),
    "Benjamin": ("Ben", "Benji"),
    "Christopher": ("Chris", "Kit"),
    "Michael": ("Mike", "Mick", "Mikey"),
    "Andrew": ("Andy", "Drew"),
    "David": ("Dave", "Davo"),
    "Joshua": ("Josh",),
    "Samuel": ("Sam", "Sammy"),
    "Alexander": ("Alex", "Xander", "Zander"),
    "Nicholas": ("Nick", "Nico"),
    "Jonathan": ("Jon", "Jonno"),
    "Nathan": ("Nate",),
    "Mitchell": ("Mitch",),
    "Bradley": ("Brad",),
    "Harrison": ("Harry",),
    "Patrick": ("Pat", "Paddy"),
    "Timothy": ("Tim",),
    "Robert": ("Rob", "Bob", "Bobby", "Robbie"),
    "Stephen": ("Steve",),
    "Richard": ("Rick", "Dick", "Richie"),
    "Anthony": ("Tony", "Ant"),
    "Emily": ("Em", "Emmy"),
    "Olivia": ("Liv", "Livvy", "Ollie"),
    "Charlotte": ("Charlie", "Lottie"),
    "Sophie": ("Soph",),
    "Jessica": ("Jess", "Jessie"),
    "Isabella": ("Bella", "Izzy", "Issy"),
    "Elizabeth": ("Liz", "Lizzie", "Beth", "Eliza", "Libby"),
    "Katherine": ("Kate", "Kathy", "Katie", "Kat"),
    "Rebecca": ("Bec", "Becky", "Becca"),
    "Madeleine": ("Maddie", "Maddy"),
    "Abigail": ("Abby", "Abi"),
    "Victoria": ("Tori", "Vicky"),
    "Alexandra": ("Alex", "Lexi", "Sandra"),
    "Samantha": ("Sam", "Sammy"),
    "Jennifer": ("Jen", "Jenny"),
    "Michelle": ("Shell",),
    "Natalie": ("Nat",),
    "Stephanie": ("Steph",),
    "Kimberley": ("Kim",),
    "Jasmine": ("Jas", "Jazz"),
    "Amelia": ("Millie", "Amy"),
    "Matilda": ("Tilly", "Tilda"),
    # vietnamese (given names are short; the English name used at work)
    "Minh": ("Mike",),
    "Hung": ("Henry",),
    "Tuan": ("Tony",),
    "Linh": ("Lynn",),
    "Huong": ("Helen",),
    # chinese
    "Xiaoming": ("Ming",),
    "Zhiwei": ("Wei",),
    "Xiaoli": ("Li",),
    "Jiayi": ("Jia",),
    # indian / punjabi
    "Rajesh": ("Raj",),
    "Siddharth": ("Sid",),
    "Sukhdeep": ("Sukh",),
    "Gurpreet": ("Gur", "Preet"),
    "Harpreet": ("Harry", "Preet"),
    "Manpreet": ("Manny",),
    "Jaspreet": ("Jas",),
    "Venkatesh": ("Venky", "Venkat"),
    "Srinivas": ("Srini",),
    "Abhishek": ("Abhi",),
    "Priyanka": ("Priya",),
    "Aishwarya": ("Aish",),
    "Ramandeep": ("Raman",),
    "Kuldeep": ("Kul",),
    "Mohammad": ("Mo", "Moe", "Mohd"),
    # greek
    "Nikolaos": ("Nick", "Nikos", "Nicholas"),
    "Konstantinos": ("Con", "Kosta", "Dean", "Gus"),
    "Dimitrios": ("Jim", "Jimmy", "Dimitri", "Dimi"),
    "Georgios": ("George",),
    "Panagiotis": ("Peter", "Panos", "Takis"),
    "Ioannis": ("John", "Yanni", "Giannis"),
    "Vasilios": ("Bill", "Billy", "Vasili"),
    "Christos": ("Chris",),
    "Athanasios": ("Tom", "Thanasi", "Nasos"),
    "Emmanouil": ("Manny", "Manolis"),
    "Spyridon": ("Spiros", "Spiro"),
    "Evangelos": ("Angelo", "Vangelis"),
    "Theodoros": ("Theo",),
    "Anastasios": ("Tasos", "Tassos"),
    "Stavros": ("Steve",),
    "Anastasia": ("Tash", "Tasia", "Natasha"),
    "Vasiliki": ("Vicky", "Vaso"),
    "Paraskevi": ("Voula", "Evi"),
    "Stavroula": ("Voula",),
    "Chrysoula": ("Chris", "Soula"),
    "Evangelia": ("Lia", "Angela"),
    "Katerina": ("Kathy", "Kat"),
    "Eleni": ("Helen",),
    # italian
    "Giuseppe": ("Joe", "Pino", "Peppe"),
    "Giovanni": ("John", "Gianni", "Vanni"),
    "Salvatore": ("Sam", "Sal", "Toto"),
    "Francesco": ("Frank", "Franco", "Ciccio"),
    "Vincenzo": ("Enzo", "Vince", "Vinnie"),
    "Antonio": ("Tony",),
    "Domenico": ("Dom", "Mimmo"),
    "Alessandro": ("Alex", "Sandro"),
    "Massimo": ("Max",),
    "Carmelo": ("Charlie", "Melo"),
    "Pasquale": ("Pat", "Lino"),
    "Giuseppina": ("Josie", "Pina"),
    "Antonella": ("Anto",),
    "Concetta": ("Connie", "Tina"),
    "Carmela": ("Carmel", "Melina"),
    "Alessandra": ("Sandra",),
    "Elisabetta": ("Betty",),
    "Gabriella": ("Gabby", "Ella"),
    # lebanese / arabic
    "Mohamed": ("Mo", "Moe"),
    "Ahmad": ("Ahmed",),
    "Khaled": ("Kal",),
    "Youssef": ("Joe", "Joseph"),
    "Ibrahim": ("Abe",),
    "Elias": ("Eli",),
    "Charbel": ("Charlie",),
    "Georges": ("George",),
    "Mariam": ("Mary",),
    "Yasmine": ("Yas", "Jasmine"),
    # filipino
    "Jose": ("Joey", "Pepe"),
    "John Paul": ("JP", "Paul", "John"),
    "Mary Grace": ("Grace", "Mae"),
    "Maria Cristina": ("Tina", "Cristina"),
    "Mark Anthony": ("Mark",),
    "Mary Joy": ("Joy",),
    "Reynaldo": ("Rey", "Jun"),
    "Edgardo": ("Edgar", "Ed"),
    "Angelica": ("Angel", "Gel"),
    "Kristine": ("Tin", "Kris"),
    "Charmaine": ("Cha",),
}

STREETS = (
    "High Street", "Main Road", "Station Street", "Church Street", "Victoria Road",
    "King Street", "Queen Street", "George Street", "Elizabeth Street", "Railway Parade",
    "Park Avenue", "Smith Street", "Bridge Road", "Albert Street", "Beach Road",
    "Hopkins Street", "Sydney Road", "Plenty Road", "Springvale Road", "Centre Road",
    "Lygon Street", "Chapel Street", "Parramatta Road", "Canterbury Road", "Liverpool Road",
    "Hume Highway", "Princes Highway", "Gympie Road", "Logan Road", "Ipswich Road",
    "Wattle Grove", "Banksia Crescent", "Acacia Court", "Bottlebrush Close",
    "Kookaburra Drive", "Waratah Place", "Jacaranda Way", "Ironbark Circuit",
    "Messmate Lane", "Riverview Terrace", "Boundary Road", "Ballarat Road",
    "Heatherton Road", "Ferntree Gully Road", "Stud Road", "Cumberland Highway",
    "Woodville Road", "Hoxton Park Road", "Beenleigh Road", "Kingston Road",
)  # fmt: skip

# Street names: a word and a type (a suburb has hundreds of streets, not fifty).
_STREET_WORDS = (
    "Acacia Albert Alexander Anderson Arthur Ash Banksia Barkly Bay Beach Bell Birch Bluegum"
    " Boronia Bourke Bridge Brunswick Burke Cambridge Camden Canning Carrington Cedar Charles"
    " Chapel Church Clarendon Coral Crown Cypress Dalton Darling Derby Dorset Douglas Duke"
    " Edward Elgin Elm Eucalyptus Fern Fitzroy Flinders Forest Francis Frederick George Gipps"
    " Glen Gordon Grange Grevillea Hampden Harbour Hawthorn Heath High Hill Hope Hunter Irving"
    " James Jasper John Kent King Kingsley Lake Lansdowne Laurel Lilly Lincoln Lindsay Lloyd"
    " Macquarie Maple Marine Market Mary Melrose Mill Miller Mitchell Montague Moore Murray"
    " Myrtle Nelson Norfolk Oak Ocean Orchard Osborne Oxford Palm Park Parkes Pine Pitt Princes"
    " Queen Railway Regent River Robert Rose Russell Salisbury Sandy Scott Shepherd Smith"
    " Spring Station Stirling Sturt Sunset Sydney Tasman Thomas Union Victoria Vine Wade"
    " Walker Waratah Warrigal Water Waterloo Wattle Wellington Wentworth William Willow Wilson"
    " Windsor Woodland York Yarra"
)
STREET_WORDS = tuple(_STREET_WORDS.split())
STREET_TYPES = ("Street", "Street", "Road", "Avenue", "Court", "Crescent", "Drive", "Place",
                "Parade", "Grove", "Close", "Way", "Lane", "Terrace", "Circuit")  # fmt: skip

# (state, postcode, suburb): suburbs where these communities live.
SUBURBS = (
    ("VIC", "3020", "Sunshine"), ("VIC", "3021", "St Albans"), ("VIC", "3030", "Werribee"),
    ("VIC", "3064", "Craigieburn"), ("VIC", "3072", "Preston"), ("VIC", "3076", "Epping"),
    ("VIC", "3129", "Box Hill North"), ("VIC", "3150", "Glen Waverley"),
    ("VIC", "3171", "Springvale"), ("VIC", "3175", "Dandenong"), ("VIC", "3199", "Frankston"),
    ("VIC", "3220", "Geelong"), ("VIC", "3350", "Ballarat"), ("VIC", "3550", "Bendigo"),
    ("VIC", "3805", "Narre Warren"), ("VIC", "3977", "Cranbourne"), ("VIC", "3012", "Footscray"),
    ("VIC", "3046", "Glenroy"), ("VIC", "3029", "Hoppers Crossing"), ("VIC", "3752", "South Morang"),
    ("NSW", "2170", "Liverpool"), ("NSW", "2166", "Cabramatta"), ("NSW", "2200", "Bankstown"),
    ("NSW", "2150", "Parramatta"), ("NSW", "2148", "Blacktown"), ("NSW", "2560", "Campbelltown"),
    ("NSW", "2195", "Lakemba"), ("NSW", "2220", "Hurstville"), ("NSW", "2067", "Chatswood"),
    ("NSW", "2135", "Strathfield"), ("NSW", "2145", "Westmead"), ("NSW", "2750", "Penrith"),
    ("NSW", "2300", "Newcastle"), ("NSW", "2500", "Wollongong"), ("NSW", "2165", "Fairfield"),
    ("QLD", "4000", "Brisbane City"), ("QLD", "4109", "Sunnybank"), ("QLD", "4113", "Runcorn"),
    ("QLD", "4122", "Mount Gravatt"), ("QLD", "4300", "Springfield"), ("QLD", "4305", "Ipswich"),
    ("QLD", "4350", "Toowoomba"), ("QLD", "4217", "Surfers Paradise"), ("QLD", "4510", "Caboolture"),
    ("QLD", "4870", "Cairns"), ("QLD", "4810", "Townsville"), ("QLD", "4114", "Logan Central"),
    ("VIC", "3000", "Melbourne"), ("VIC", "3016", "Williamstown"), ("VIC", "3023", "Deer Park"),
    ("VIC", "3037", "Sydenham"), ("VIC", "3038", "Keilor Downs"), ("VIC", "3047", "Broadmeadows"),
    ("VIC", "3058", "Coburg"), ("VIC", "3060", "Fawkner"), ("VIC", "3074", "Thomastown"),
    ("VIC", "3083", "Bundoora"), ("VIC", "3108", "Doncaster"), ("VIC", "3122", "Hawthorn"),
    ("VIC", "3133", "Vermont"), ("VIC", "3152", "Wantirna"), ("VIC", "3156", "Ferntree Gully"),
    ("VIC", "3168", "Clayton"), ("VIC", "3169", "Clayton South"), ("VIC", "3174", "Noble Park"),
    ("VIC", "3178", "Rowville"), ("VIC", "3186", "Brighton"), ("VIC", "3196", "Chelsea"),
    ("VIC", "3337", "Melton"), ("VIC", "3429", "Sunbury"), ("VIC", "3810", "Pakenham"),
    ("VIC", "3806", "Berwick"), ("VIC", "3844", "Traralgon"), ("VIC", "3630", "Shepparton"),
    ("NSW", "2000", "Sydney"), ("NSW", "2113", "Macquarie Park"), ("NSW", "2120", "Epping"),
    ("NSW", "2140", "Homebush"), ("NSW", "2160", "Merrylands"), ("NSW", "2161", "Guildford"),
    ("NSW", "2176", "Bossley Park"), ("NSW", "2190", "Greenacre"), ("NSW", "2192", "Belmore"),
    ("NSW", "2196", "Punchbowl"), ("NSW", "2204", "Marrickville"), ("NSW", "2209", "Beverly Hills"),
    ("NSW", "2217", "Kogarah"), ("NSW", "2232", "Sutherland"), ("NSW", "2250", "Gosford"),
    ("NSW", "2259", "Wyong"), ("NSW", "2650", "Wagga Wagga"), ("NSW", "2763", "Quakers Hill"),
    ("NSW", "2767", "Doonside"), ("NSW", "2770", "Mount Druitt"), ("NSW", "2880", "Broken Hill"),
    ("QLD", "4030", "Kedron"), ("QLD", "4053", "Stafford"), ("QLD", "4066", "Toowong"),
    ("QLD", "4101", "West End"), ("QLD", "4110", "Acacia Ridge"), ("QLD", "4118", "Browns Plains"),
    ("QLD", "4124", "Boronia Heights"), ("QLD", "4127", "Springwood"), ("QLD", "4152", "Carindale"),
    ("QLD", "4207", "Beenleigh"), ("QLD", "4209", "Coomera"), ("QLD", "4211", "Nerang"),
    ("QLD", "4500", "Strathpine"), ("QLD", "4551", "Caloundra"), ("QLD", "4701", "Rockhampton"),
)  # fmt: skip

EMAIL_DOMAINS = (
    ("gmail.com", 40), ("hotmail.com", 12), ("outlook.com", 8), ("yahoo.com.au", 6),
    ("bigpond.com", 7), ("icloud.com", 7), ("live.com.au", 3), ("optusnet.com.au", 3),
    ("tpg.com.au", 2), ("iinet.net.au", 2), ("y7mail.com", 1), ("outlook.com.au", 2),
)  # fmt: skip
